"""The probe's GPU telemetry, run as a real ``python3 -`` subprocess against the fake nvidia-smi."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fakes.proberun import PROBE, PROBE_FILES, SOURCE, ProbeStream, python3, run_probe
from fakes.scenario import (
    FAKES,
    H200,
    SEED_CSV,
    app,
    box,
    build_bundled,
    gpu,
    load,
    write_scenario,
)

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.probe import main as probe

FAKE_SMI = FAKES / "nvidia-smi"
CONTRACT_GPU_KEYS = {
    "index", "uuid", "name", "bus_id", "util", "mem_util", "mem_used_mib", "mem_total_mib",
    "mem_reserved_mib", "temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
    "pstate", "throttle_reasons", "ecc_uncorrected",
}  # fmt: skip
TOP_KEYS = {
    "format", "time", "host", "probe_mode", "clk_tck", "boot_time", "telemetry", "gpus",
    "gpu_procs", "procs", "logs", "run", "errors", "interval", "last_step", "supervisor",
    "machine", "workers",
}  # fmt: skip


def smi(*args: str) -> bytes:
    return subprocess.run([str(FAKE_SMI), *args], capture_output=True, check=True).stdout


def recorded_fields(kind: str) -> str:
    header = (H200 / f"q_gpu_{kind}_units.csv").read_text().splitlines()[0]
    return ",".join(h.split(" [")[0] for h in header.split(", "))


# ---- the fake itself plays the real bytes -------------------------------------------------


def test_bundled_scenarios_are_built_from_the_recorded_bytes() -> None:
    for name, data in build_bundled().items():
        assert load(name) == data, f"regenerate with: python tests/fakes/scenario.py ({name})"


@pytest.mark.parametrize("kind", ["idle", "load"])
def test_fake_replays_recorded_h200_csv(fake_smi, kind: str) -> None:
    fake_smi.use(f"h200-{kind}")
    fields = recorded_fields(kind)
    assert (
        smi(f"--query-gpu={fields}", "--format=csv,noheader,nounits")
        == (H200 / f"q_gpu_{kind}_nounits.csv").read_bytes()
    )
    if kind == "idle":  # the units file is of the same sample only when idle
        assert (
            smi(f"--query-gpu={fields}", "--format=csv")
            == (H200 / "q_gpu_idle_units.csv").read_bytes()
        )


def test_fake_replays_recorded_apps_and_seed(fake_smi) -> None:
    fake_smi.use("h200-load")
    rec = (H200 / "q_apps_load.csv").read_bytes().splitlines(keepends=True)
    assert smi(
        "--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id", "--format=csv"
    ) == b"".join(rec[:2])
    assert (
        smi(
            "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
            "--format=csv,noheader,nounits",
        )
        == rec[2]
    )
    fake_smi.use("seed-incident")
    fields = "--query-gpu=index,memory.used,utilization.gpu"
    assert smi(fields, "--format=csv,noheader") == SEED_CSV.read_bytes()


def test_fake_rejects_unknown_fields_like_the_real_one(fake_smi) -> None:
    res = subprocess.run(
        [str(FAKE_SMI), "--query-gpu=index,bogus.field", "--format=csv"], capture_output=True
    )
    assert res.returncode == 2
    assert b'Field "bogus.field" is not a valid field to query.' in res.stdout
    # aliases from the driver's own help text are accepted, in the order asked
    fake_smi.use("h200-idle")
    assert smi("--query-gpu=clocks.sm,gpu_name,index", "--format=csv,noheader,nounits") == (
        b"1980, NVIDIA H200, 0\n"
    )
    assert smi("-L").startswith(b"GPU 0: NVIDIA H200 (UUID: GPU-d56d3e36")


# ---- the probe through nvidia-smi ---------------------------------------------------------


def test_seed_incident(fake_smi) -> None:
    out = run_probe("--no-nvml")
    assert set(out) == TOP_KEYS
    assert out["telemetry"]["source"] == "nvidia-smi"
    assert out["telemetry"]["error"] is None
    assert out["errors"] == []
    gpus = out["gpus"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert [g["util"] for g in gpus] == [0, 0, 100, 100, 0, 0, 0, 100]
    assert [g["mem_used_mib"] for g in gpus] == [0] * 8
    assert len({g["uuid"] for g in gpus}) == 8
    assert all(set(g) == CONTRACT_GPU_KEYS for g in gpus)
    assert out["gpu_procs"] == []
    snap = Snapshot.from_json(json.dumps(out))
    assert len(snap.gpus) == 8 and snap.errors == ()
    assert snap.gpus[7].util == 100 and snap.gpus[7].mem_used_mib == 0


@pytest.mark.parametrize("kind", ["idle", "load"])
def test_h200_values_equal_the_recorded_ones(fake_smi, kind: str) -> None:
    fake_smi.use(f"h200-{kind}")
    out = run_probe("--no-nvml")
    header = recorded_fields(kind).split(",")
    rec = dict(
        zip(
            header,
            (H200 / f"q_gpu_{kind}_nounits.csv").read_text().strip().split(", "),
            strict=True,
        )
    )
    (g,) = out["gpus"]
    assert g == {
        "index": 0,
        "uuid": rec["uuid"],
        "name": "NVIDIA H200",
        "bus_id": "00000000:00:06.0",
        "util": int(rec["utilization.gpu"]),
        "mem_util": int(rec["utilization.memory"]),
        "mem_used_mib": int(rec["memory.used"]),
        "mem_total_mib": 143771,
        "mem_reserved_mib": 616,
        "temp_c": int(rec["temperature.gpu"]),
        "power_w": float(rec["power.draw"]),
        "power_limit_w": 700.0,
        "sm_clock_mhz": int(rec["clocks.current.sm"]),
        "mem_clock_mhz": 3201,
        "pstate": "P0",
        "throttle_reasons": int(rec["clocks_event_reasons.active"], 16),
        "ecc_uncorrected": 0,
    }
    if kind == "load":
        assert g["mem_used_mib"] == 1011 and g["util"] == 100 and g["throttle_reasons"] == 4
        assert out["gpu_procs"] == [
            {"pid": 424, "gpu_uuid": rec["uuid"], "used_mib": 1002, "name": "python3"}
        ]
    else:
        assert g["mem_used_mib"] == 0 and out["gpu_procs"] == []


def test_placeholders_become_null_and_names_keep_commas(fake_smi) -> None:
    odd = {
        "temperature.gpu": "[Not Supported]",
        "power.draw": "[Insufficient Permissions]",
        "ecc.errors.uncorrected.volatile.total": "N/A",
        "name": "NVIDIA H200, rev 2",
        "memory.reserved": "",
    }
    g = gpu(0, util="[N/A]", fields=odd)
    fake_smi.write([g], [app(77, gpu=0, used_mib=None, name="python3, the trainer")])
    out = run_probe("--no-nvml")
    (res,) = out["gpus"]
    assert res["util"] is None and res["temp_c"] is None and res["power_w"] is None
    assert res["ecc_uncorrected"] is None and res["mem_reserved_mib"] is None
    assert res["name"] == "NVIDIA H200, rev 2"
    assert out["gpu_procs"] == [
        {"pid": 77, "gpu_uuid": g["uuid"], "used_mib": None, "name": "python3, the trainer"}
    ]
    assert out["errors"] == []


def test_missing_gpu_and_topologies(fake_smi) -> None:
    gpus = [g for g in box(8) if g["index"] != "5"]
    fake_smi.write(gpus)
    assert [g["index"] for g in run_probe("--no-nvml")["gpus"]] == [0, 1, 2, 3, 4, 6, 7]


def test_hung_nvidia_smi_times_out_and_is_killed(fake_smi) -> None:
    fake_smi.hang()
    t0 = time.monotonic()
    out = run_probe("--no-nvml", "--smi-timeout", "1")
    assert time.monotonic() - t0 < 1 + 2
    assert out["telemetry"]["source"] == "none"
    assert out["telemetry"]["error"] == "nvidia-smi did not answer within 1s"
    assert out["gpus"] == []
    assert len(fake_smi.calls()) == 1  # no second (apps) call after a hang
    marker = f"FAKE_SMI_LOG={fake_smi.log}".encode()
    for env in glob.glob("/proc/[0-9]*/environ"):  # the hung fake was killed, not left behind
        try:
            assert marker not in Path(env).read_bytes().split(b"\0")
        except OSError:
            pass


def test_no_nvml_and_no_nvidia_smi(fake_smi, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = dict(os.environ, PATH=str(empty))
    out = run_probe(env=env)  # NVML: the fake pynvml (first on PYTHONPATH) finds no driver
    assert out["telemetry"]["source"] == "none"
    assert out["telemetry"]["error"] == "no NVML and no nvidia-smi on PATH"
    assert out["gpus"] == [] and out["gpu_procs"] == []
    assert out["procs"]  # everything else still works


def _row(values: dict[str, str]) -> str:
    return ", ".join(values.get(f, "0") for f, _, _ in probe.GPU_FIELDS)


def test_malformed_truncated_and_non_utf8_rows_are_skipped(fake_smi) -> None:
    good = _row({"index": "0", "uuid": "GPU-a", "name": "NVIDIA H200", "utilization.gpu": "55"})
    data = b"\n".join(
        [
            good.encode(),
            b"1, GPU-b, 00000000:18:00.0, 100",  # truncated
            _row({"index": "x1", "uuid": "GPU-c"}).encode(),  # non-numeric index
            _row({"index": "3", "name": "H200 \xff\xfe"}).encode("latin-1"),  # not UTF-8
            b"",
            _row({"index": "[N/A]"}).encode(),  # no index at all
            _row({"index": "4", "utilization.gpu": "lots"}).encode(),  # one unreadable value
            _row({"index": "5", "uuid": "GPU-e"}).encode()[:40],  # cut mid-line (no newline)
        ]
    )
    apps = b"12, 100, GPU-a, python3\nabc, 1, GPU-a, x\n13, 5, GPU-a\n"
    fake_smi.raw(data, apps)
    out = run_probe("--no-nvml")
    assert [g["index"] for g in out["gpus"]] == [0, 4]
    assert out["gpus"][0]["util"] == 55 and out["gpus"][1]["util"] is None
    assert out["telemetry"]["source"] == "nvidia-smi"
    errs = out["errors"]
    assert any("not UTF-8" in e for e in errs)
    assert sum("malformed" in e and "nvidia-smi line" in e for e in errs) == 5
    assert any("unreadable utilization.gpu 'lots'" in e for e in errs)
    assert [p["pid"] for p in out["gpu_procs"]] == [12]
    assert sum("compute-apps line" in e for e in errs) == 2
    assert len(Snapshot.from_dict(out).errors) == len(errs)


def test_nvidia_smi_failing_reports_its_text(fake_smi) -> None:
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    fake_smi.raw(msg + "\n", rc=9)
    out = run_probe("--no-nvml")
    assert out["telemetry"] == {
        "source": "none",
        "error": f"nvidia-smi failed (exit 9): {msg}",
        "elapsed_ms": out["telemetry"]["elapsed_ms"],
    }


TRACEBACK = """Traceback (most recent call last):
  File "/usr/bin/nvidia-smi", line 3, in <module>
    import pynvml
    ^^^^^^^^^^^^^
ModuleNotFoundError: No module named 'pynvml'
"""
MISMATCH = (
    "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.183\n"
)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (TRACEBACK, "ModuleNotFoundError: No module named 'pynvml'"),
        (MISMATCH, "Failed to initialize NVML: Driver/library version mismatch"),
        ("first\n\nlast words  \n", "last words"),
        ("   only indented\n", "only indented"),
        ("", "no output"),
        ("x" * 300, "x" * 200),
    ],
)
def test_a_failing_tool_is_quoted_by_the_line_that_says_why(text: str, why: str) -> None:
    from dflash_tui.core.probe.gpu import why_line

    assert why_line(text) == why


def test_nvidia_smi_failing_with_a_traceback_names_the_exception(fake_smi) -> None:
    fake_smi.raw(TRACEBACK, rc=1)
    error = run_probe("--no-nvml")["telemetry"]["error"]
    assert error == "nvidia-smi failed (exit 1): ModuleNotFoundError: No module named 'pynvml'"


def test_older_driver_field_names(fake_smi) -> None:
    """Drivers before clocks_event_reasons know only clocks_throttle_reasons: same value."""
    fake_smi.write(box(2), rejected_fields=["clocks_event_reasons.active"])
    out = run_probe("--no-nvml")
    assert out["telemetry"]["error"] is None and out["errors"] == []
    assert [g["throttle_reasons"] for g in out["gpus"]] == [1, 1]
    asked = [c[0] for c in fake_smi.calls() if c[0].startswith("--query-gpu")]
    assert len(asked) == 2 and "clocks_throttle_reasons.active" in asked[1]


def test_rejected_field_is_dropped_then_safe_list(fake_smi) -> None:
    fake_smi.write(box(2), rejected_fields=["memory.reserved"])
    out = run_probe("--no-nvml")
    assert out["telemetry"]["source"] == "nvidia-smi"
    assert "memory.reserved" in out["telemetry"]["error"]
    assert [g["mem_reserved_mib"] for g in out["gpus"]] == [None, None]
    assert [g["temp_c"] for g in out["gpus"]] == [37, 37]
    # several unknown fields: fall back to the small safe list
    rejected = ["memory.reserved", "temperature.gpu", "power.draw", "pstate"]
    fake_smi.write(box(2, busy=[1]), rejected_fields=rejected)
    out = run_probe("--no-nvml")
    assert "index,uuid,utilization.gpu,memory.used,memory.total,name" in out["telemetry"]["error"]
    assert [(g["util"], g["mem_used_mib"], g["temp_c"]) for g in out["gpus"]] == [
        (0, 0, None),
        (100, 0, None),
    ]
    # even the safe list rejected: no readings
    fake_smi.write(box(1), rejected_fields=["index"])
    out = run_probe("--no-nvml")
    assert out["telemetry"]["source"] == "none"
    assert 'Field "index" is not a valid field' in out["telemetry"]["error"]


def test_interval_mode_remembers_the_accepted_fields(fake_smi) -> None:
    fake_smi.write(box(1), rejected_fields=["clocks_event_reasons.active"])
    with ProbeStream("--no-nvml", interval=0.1) as s:
        for _ in range(3):
            assert s.next()["gpus"][0]["throttle_reasons"] == 1
    gpu_calls = [c for c in fake_smi.calls() if c[0].startswith("--query-gpu")]
    assert len(gpu_calls) >= 3
    assert all("clocks_throttle_reasons" in c[0] for c in gpu_calls[1:])


def test_interval_stream_follows_a_changing_scenario_and_exits_on_closed_pipe(fake_smi) -> None:
    fake_smi.write(box(2))
    with ProbeStream("--no-nvml", interval=0.1) as s:
        first = s.next()
        assert [g["util"] for g in first["gpus"]] == [0, 0]
        fake_smi.write(box(2, busy=[1]))
        s.until(lambda d: [g["util"] for g in d["gpus"]] == [0, 100])
        t1, t2 = s.next()["time"], s.next()["time"]
        assert 0.03 < t2 - t1 < 2.0
        assert s.proc.stdout is not None
        s.proc.stdout.close()  # the reader goes away
        s.sel.close()
        assert s.proc.wait(10) == 0
        assert b"Traceback" not in s.proc.stderr.read()  # type: ignore[union-attr]


# ---- NVML (the fake pynvml on PYTHONPATH) --------------------------------------------------


def test_nvml_memory_means_what_nvidia_smi_means(fake_smi) -> None:
    fake_smi.use("h200-load")
    fake_smi.nvml()
    out = run_probe()
    assert out["telemetry"]["source"] == "nvml" and out["telemetry"]["error"] is None
    via_smi = run_probe("--no-nvml")
    assert via_smi["telemetry"]["source"] == "nvidia-smi"
    assert out["gpus"] == via_smi["gpus"]  # every field, both sources
    assert out["gpu_procs"] == via_smi["gpu_procs"]


def test_nvml_reload_plays_a_scenario_that_moves(fake_smi, tmp_path: Path) -> None:
    """bench/hosts_cost.py's moving GPUs under a long-lived probe: with FAKE_NVML_RELOAD the
    fake reads the rewritten scenario; without it, only what nvmlInit read."""
    path = tmp_path / "moving.json"
    for reload in (False, True):
        write_scenario(path, [gpu(0, util=10)])
        fake_smi.use(path)
        fake_smi.nvml(reload=reload)
        with ProbeStream(interval=0.1) as s:
            first = s.next()
            assert first["telemetry"]["source"] == "nvml" and first["gpus"][0]["util"] == 10
            write_scenario(path, [gpu(0, util=77)])
            if reload:
                s.until(lambda d: d["gpus"][0]["util"] == 77)
            else:
                assert [s.next()["gpus"][0]["util"] for _ in range(5)] == [10] * 5


def test_nvml_v1_only_reports_used_with_reserve(fake_smi) -> None:
    fake_smi.use("h200-load")
    fake_smi.nvml(v1_only=True)
    (g,) = run_probe()["gpus"]
    # pynvml_load.txt: v1 used 1704853504 B = 1625.875 MiB, the reserve included
    assert g["mem_used_mib"] == 1626 and g["mem_reserved_mib"] is None


def test_nvml_unknown_process_memory_and_hang(fake_smi) -> None:
    fake_smi.write(box(2), [app(4242, gpu=1, used_mib=None)])
    fake_smi.nvml()
    out = run_probe()
    assert out["gpu_procs"] == [
        {"pid": 4242, "gpu_uuid": out["gpus"][1]["uuid"], "used_mib": None, "name": "python3"}
    ]
    fake_smi.nvml(hang=True)
    t0 = time.monotonic()
    out = run_probe("--smi-timeout", "1")
    assert time.monotonic() - t0 < 4
    # A stuck NVML does not blank the GPUs: nvidia-smi reads them meanwhile.
    assert out["telemetry"]["source"] == "nvidia-smi" and len(out["gpus"]) == 2
    assert out["telemetry"]["error"].startswith("NVML did not answer within 1s; read by nvidia-smi")
    env = {k: v for k, v in os.environ.items()}
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if not Path(p, "nvidia-smi").exists()
    )
    out = run_probe("--smi-timeout", "1", env=env)  # and without nvidia-smi: no readings
    assert out["telemetry"]["source"] == "none"
    assert out["telemetry"]["error"] == "NVML did not answer within 1s"


# ---- python 3.8 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [*PROBE_FILES, FAKE_SMI, FAKES / "nvml" / "pynvml.py"], ids=lambda p: p.name
)
def test_sources_parse_as_python_3_8(path: Path) -> None:
    ast.parse(path.read_text(), feature_version=(3, 8))


def _old_pythons() -> list[str]:
    """python3.6 / 3.7 / 3.8 interpreters found here (PATH or pyenv), not pyenv shims."""
    found = []
    for v in ("3.6", "3.7", "3.8"):
        cands = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}*/bin/python{v}")))
        exe = shutil.which(f"python{v}")
        if exe and "shims" not in exe:
            cands.insert(0, exe)
        found += cands[:1]
    return found


@pytest.mark.skipif(not _old_pythons(), reason="no python3.6-3.8 here")
@pytest.mark.parametrize("py", _old_pythons() or ["none"], ids=lambda p: Path(p).name)
def test_probe_runs_on_old_python(fake_smi, tmp_path: Path, py: str) -> None:
    """The contract says >= 3.8; older hosts (3.6 on EL7) work too: no __future__ import."""
    log = tmp_path / "a log.txt"
    log.write_text("one\ntwo\n")
    out = run_probe("--no-nvml", "--log", str(log), python=py)
    assert [g["util"] for g in out["gpus"]] == [0, 0, 100, 100, 0, 0, 0, 100]
    assert out["logs"][0]["lines"] == ["one", "two"] and out["procs"]
    fake_smi.use("h200-load")
    fake_smi.nvml()
    assert run_probe(python=py)["gpus"][0]["mem_used_mib"] == 1011
    with ProbeStream("--no-nvml", interval=0.1, python=py) as s:
        assert s.next()["gpus"] and s.next()["gpus"]


def test_source_is_what_the_transports_send() -> None:
    from dflash_tui.core.probe.bundle import probe_source

    assert probe_source() == SOURCE and python3()
    assert SOURCE.count(b"# >>> parts") == 0  # the import block of the parts is dropped
    ast.parse(SOURCE, feature_version=(3, 8))


def test_probe_runs_as_a_file(fake_smi) -> None:
    """python3 tui/core/probe/main.py (how a person runs it) imports its parts from its folder."""
    res = subprocess.run(
        [python3(), str(PROBE), "--once", "--no-nvml"], capture_output=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert [g["util"] for g in json.loads(res.stdout)["gpus"]] == [0, 0, 100, 100, 0, 0, 0, 100]


def test_real_h200_readings_agree_across_sources() -> None:
    """Recorded on a real H200: NVML and nvidia-smi give the same memory numbers."""
    real = json.loads((H200 / "probe_real.json").read_text())
    for state, used in (("idle", 0), ("load", 1011)):
        nv, sm = real[f"nvml_{state}"], real[f"smi_{state}"]
        assert nv["telemetry"]["source"] == "nvml" and sm["telemetry"]["source"] == "nvidia-smi"
        keys = ("index", "uuid", "name", "bus_id", "mem_used_mib", "mem_total_mib",
                "mem_reserved_mib", "power_limit_w", "pstate")  # fmt: skip
        for k in keys:
            assert nv["gpus"][0][k] == sm["gpus"][0][k], k
        assert nv["gpus"][0]["mem_used_mib"] == used
        assert nv["gpu_procs"] == sm["gpu_procs"]
        assert len(Snapshot.from_dict(nv).gpus) == 1
