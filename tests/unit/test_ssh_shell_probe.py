"""The degraded shell probe (remote hosts without python3) speaks the python probe's format."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.proberun import run_probe
from fakes.scenario import FAKES, FakeSmi, app, box, gpu
from support import busybox_bin

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import run_state
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.transport import LocalTransport
from dflash_tui.core.probe.loader import SHELL_PROBE, launcher

TOOLS = "sh awk sed cat grep ps tail head wc ls date od tr mktemp rm mkdir mv sleep timeout"
TOOLS += " hostname getconf uname env stat df"


def shell_probe(
    *args: str, path: str | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    if path:
        env = dict(env or os.environ, PATH=path)
    out = subprocess.run(
        ["sh", str(SHELL_PROBE), "-", "--once", *args], capture_output=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    assert len(lines) == 1, out.stdout[:500]
    return json.loads(lines[0])


def no_python_path(where: Path, busybox: bool = False) -> str:
    """A PATH with the usual tools (or BusyBox's: skipped where it is missing) but no python3;
    nvidia-smi is the fake."""
    where.mkdir()
    if busybox:
        return _with_fake_smi(busybox_bin(where))  # its applets only
    for tool in TOOLS.split():
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            os.symlink(found, where / tool)
    return _with_fake_smi(where)


def _with_fake_smi(where: Path) -> str:
    python = shutil.which("python3", path="/usr/bin:/bin")
    (where / "nvidia-smi").write_text(f'#!/bin/sh\nexec {python} {FAKES / "nvidia-smi"} "$@"\n')
    (where / "nvidia-smi").chmod(0o755)
    return str(where)


@pytest.fixture
def job(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def run_dir(root: Path, pid: int, rid: str = "20261202-090000-abcd", start: int = 1) -> Path:
    d = root / rid
    d.mkdir(parents=True)
    (d / "command").write_text('python3 train.py --name "x y"\n')
    (d / "pid").write_text(f"{pid} {pid} {start}\n")
    (d / "started_at").write_text("1764669600.5\n")
    (d / "output.log").write_text('step=1 loss=2.3\nsaid "hi" \\ \x1b[31mred\x1b[0m\tTAB\n')
    return d


def test_same_document_as_the_python_probe(
    fake_smi: FakeSmi, job: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    fake_smi.write(
        [*box(2, busy=[1]), gpu(2, fields={"power.draw": "[N/A]", "temperature.gpu": "[N/A]"})],
        [app(job.pid, gpu=1)],
    )
    root = tmp_path / "runs"
    run_dir(root, 77, "20261201-000000-0bd0")
    run_dir(root, job.pid, start=int(Path(f"/proc/{job.pid}/stat").read_text().split()[21]))
    log = tmp_path / "extra.log"
    log.write_text("one\ntwo\npartial")
    args = (f"--run-root={root}", f"--log={log}", f"--log={tmp_path}/missing.log", "--no-nvml")
    py, sh = run_probe(*args), shell_probe(*args)
    assert sh["probe_mode"] == "shell" and "degraded probe (shell)" in sh["errors"][0]
    assert sh["gpus"] == py["gpus"] and sh["gpu_procs"] == py["gpu_procs"]
    assert sh["run"] == py["run"] and sh["telemetry"]["source"] == "nvidia-smi"
    for a, b in zip(sh["logs"], py["logs"], strict=True):
        assert int(a.pop("mtime") or 0) == int(b.pop("mtime") or 0)
        assert a.pop("resume") is None  # the shell probe cannot resume a tail: it tails again
        b.pop("resume")
        assert a == b
    rows = {p["pid"]: p for p in sh["procs"]}
    want = next(p for p in py["procs"] if p["pid"] == job.pid)
    assert rows[job.pid] == {**want, "cpu_pct": None}
    assert set(rows) & {p["pid"] for p in py["procs"]} >= {1, job.pid}
    stable = ("ppid", "pgid", "sid", "start_ticks", "user", "cmd", "nspid")
    for p in py["procs"]:  # rows read the same way (processes that cannot change meanwhile)
        if p["pid"] in (1, os.getpid(), os.getppid()):
            assert {k: rows[p["pid"]][k] for k in stable} == {k: p[k] for k in stable}
    assert Snapshot.from_json(json.dumps(sh)).errors == tuple(sh["errors"])


def test_older_drivers_and_no_driver(fake_smi: FakeSmi, tmp_path: Path) -> None:
    fake_smi.write(box(1), rejected_fields=["clocks_event_reasons.active"])  # the old name
    assert shell_probe()["gpus"] == run_probe("--no-nvml")["gpus"]
    for rejected in (["memory.reserved"], ["memory.reserved", "pstate", "power.draw"]):
        fake_smi.write(box(1), rejected_fields=rejected)  # dropped, then the few safe fields
        out, py = shell_probe(), run_probe("--no-nvml")
        assert out["gpus"] == py["gpus"] and out["gpus"][0]["mem_reserved_mib"] is None
        assert out["telemetry"]["error"] == py["telemetry"]["error"]
    out = shell_probe(path="/usr/bin:/bin")
    assert out["telemetry"] == {"source": "none", "error": "no NVML and no nvidia-smi on PATH",
                                "elapsed_ms": None}  # fmt: skip
    assert out["gpus"] == [] and out["procs"]


@pytest.mark.parametrize(
    "text",
    [
        'Traceback (most recent call last):\n  File "x", line 1\n    y\nOSError: no device\n',
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 5\n",
        "  all indented  \n\n",
        "",
    ],
)
def test_a_failing_nvidia_smi_is_quoted_as_the_python_probe_does(
    fake_smi: FakeSmi, text: str
) -> None:
    fake_smi.raw(text, rc=3)
    assert shell_probe()["telemetry"]["error"] == run_probe("--no-nvml")["telemetry"]["error"]


def test_interval_mode_tails_only_appended_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("old\n" * 10)
    cmd = ["sh", str(SHELL_PROBE), "-", "--interval=0.1", f"--log={log}", "--tail-bytes=8"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout is not None

    def lines() -> list[str]:
        return json.loads(proc.stdout.readline())["logs"][0]["lines"]  # type: ignore[union-attr]

    try:
        assert lines() == ["old", "old"]  # the first sample: the last 8 bytes, whole lines
        with log.open("a") as f:
            f.write("new 1\nnew 2\npart")
        time.sleep(0.3)
        seen = [ln for _ in range(4) for ln in lines()]
        assert seen == ["new 1", "new 2"]  # the partial line waits for its newline
        with log.open("a") as f:
            f.write("ial\n")
        time.sleep(0.3)
        assert [ln for _ in range(4) for ln in lines()] == ["partial"]
        log.write_text("fresh\n")  # truncated: the tail starts again at 0
        time.sleep(0.3)
        samples = [json.loads(proc.stdout.readline())["logs"][0] for _ in range(4)]
        assert any(s["truncated"] for s in samples)
        assert [ln for s in samples for ln in s["lines"]] == ["fresh"]
    finally:
        proc.kill()
        proc.wait()


def test_the_tools_path_needs_no_busybox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine with only python3 and the usual tools, the non-busybox tests still run."""
    monkeypatch.setenv("PATH", str(tmp_path / "nothing here"))
    path = Path(no_python_path(tmp_path / "bin"))
    assert (path / "sh").exists() and (path / "nvidia-smi").exists()
    assert not (path / "python3").exists()


def test_busybox_only(fake_smi: FakeSmi, tmp_path: Path) -> None:
    fake_smi.write(box(2, busy=[0]))
    out = shell_probe(f"--run-root={tmp_path}", path=no_python_path(tmp_path / "bb", True))
    assert [g["util"] for g in out["gpus"]] == [100, 0] and len(out["procs"]) > 2


async def test_the_loader_picks_the_shell_probe_without_python3(
    fake_smi: FakeSmi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi.write(box(1))
    host = HostConfig(run_root=str(tmp_path / "runs"))
    full = await sample_once(LocalTransport(python=launcher()), host)
    monkeypatch.setenv("PATH", no_python_path(tmp_path / "bin"))
    degraded = await sample_once(LocalTransport(python=launcher()), host)
    assert (full.probe_mode, degraded.probe_mode) == ("python", "shell")
    assert degraded.gpus == full.gpus
    assert any("python3 is not on PATH" in e for e in degraded.errors)


@pytest.mark.parametrize("spelling", ["~/x.log", "$HOME/x.log", "${HOME}/x.log"])
def test_both_probes_read_home_in_log_and_run_root_paths(tmp_path: Path, spelling: str) -> None:
    # As control.sh reads a run root: ~, $HOME or ${HOME} at the start, nothing else expanded.
    (tmp_path / "x.log").write_text("step=1 loss=2.0\n")
    rid = "20261202-090000-abcd"
    run_dir(tmp_path / "runs", os.getpid(), rid)
    root = spelling.replace("x.log", "runs")
    env = dict(os.environ, HOME=str(tmp_path))
    literal = (f"{tmp_path}/$HOME/x.log",)  # mid-path: a plain name
    args = (f"--log={spelling}", *(f"--log={p}" for p in literal), f"--run-root={root}")
    for out in (shell_probe(*args, env=env), run_probe(*args, env=env)):
        logs = {log["path"]: log for log in out["logs"]}
        assert logs[spelling]["exists"] and logs[spelling]["lines"] == ["step=1 loss=2.0"]
        assert not any(logs[p]["exists"] for p in literal)
        assert out["run"] is not None and out["run"]["id"] == rid


def test_supervisor_and_last_step_as_the_python_probe(
    job: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """supervisor.json and the run's last step event reach the same Snapshot from both probes
    (the shell probe sends their text, parsed on our side); a hostile file is an error, not a
    broken sample line."""
    root = tmp_path / "runs"
    d = run_dir(root, job.pid, start=int(Path(f"/proc/{job.pid}/stat").read_text().split()[21]))
    rec = {
        "schema": 1,
        "pid": 4242,
        "host": "bastion",
        "heartbeat_at": 1.7e9,
        "heartbeat_s": 2,
        "restarts": 3,
        "policy": {"enabled": True},
        "mode": "daemon",
        "note": 'a "q" \\ b',
    }
    (root / "supervisor.json").write_text(json.dumps(rec, indent=2) + "\n")  # several lines
    steps = [{"event": "step", "time": 1.7e9 + i, "step": i, "loss": 2.5 - i / 10, "acc": 0.1,
              "tok_s": 1000.0 + i} for i in range(1, 4)]  # fmt: skip
    lines = [json.dumps(s, separators=(",", ":")) for s in steps]
    lines.append(json.dumps({"event": "checkpoint", "step": 3}, separators=(",", ":")))
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")
    args = (f"--run-root={root}", "--no-nvml")
    py = Snapshot.from_dict(run_probe(*args))
    sh = Snapshot.from_dict(shell_probe(*args, path=no_python_path(tmp_path / "bin")))
    assert sh.supervisor == py.supervisor and sh.supervisor is not None
    assert sh.supervisor.restarts == 3 and sh.supervisor.doc == rec
    assert sh.last_step == py.last_step and sh.last_step is not None
    assert sh.last_step.step == 3 and sh.last_step.tok_s == 1003.0
    (root / "supervisor.json").write_text('{"pid": 1, "x": "\x1b]0;T\x07\n')  # cut, hostile
    bad = shell_probe(*args, path=no_python_path(tmp_path / "bin2"))
    snap = Snapshot.from_dict(bad)
    assert snap.supervisor is None and any("supervisor: not JSON" in e for e in snap.errors)


def test_both_probes_date_a_run_directory_without_a_pid_file(tmp_path: Path) -> None:
    # What a SIGKILLed launcher leaves: a run directory with no pid file. Its age is what lets
    # the app and `status` read it as launch-failed (abandoned) instead of starting for ever.
    root = tmp_path / "runs"
    d = root / "20261202-090000-abcd"
    d.mkdir(parents=True)
    (d / "command").write_text("python3 train.py\n")
    old = int(time.time()) - 600
    os.utime(d, (old, old))
    py, sh = run_probe(f"--run-root={root}"), shell_probe(f"--run-root={root}")
    assert py["run"]["born"] == sh["run"]["born"] == old
    run = Snapshot.from_json(json.dumps(sh)).run
    assert run is not None and run_state(run, [], time.time()) == "launch-failed"
    (d / "pid").write_text("123 123 1\n")  # a pid file: its age no longer matters
    assert run_probe(f"--run-root={root}")["run"]["born"] is None
