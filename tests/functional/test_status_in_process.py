"""``status`` on this machine samples in this process (tui/core/link/local_probe.py): the same
document as the probe subprocess, no second interpreter, the subprocess's timeout kept."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import app, box, gpu

from dflash_tui.cli.status_doc import host_document
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.timings import START_WINDOW_S
from dflash_tui.core.control.kill import kill
from dflash_tui.core.control.launch import launch
from dflash_tui.core.link.errors import TransportError
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.local_probe import LocalSample, in_process
from dflash_tui.core.link.transport import LocalTransport

JOB = "echo 'step 1 loss 2.5'; echo 'a second line'; sleep 60"
# What differs between two samples taken a moment apart, whoever takes them (ages, the
# machine's free memory and disk, which other programs change meanwhile).
VOLATILE = {
    "time", "cpu_pct", "elapsed_ms", "last_step_age_s", "checkpoint_age_s", "mem_available_kb",
    "swap_free_kb", "free_bytes", "free_inodes",
}  # fmt: skip


def stable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: stable(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [stable(x) for x in v]
    return v


@pytest.fixture
async def job(tmp_path: Path) -> AsyncIterator[HostConfig]:
    """A real run (launched as the app launches one) with a log and a GPU process."""
    runs = tmp_path / "runs"
    host = HostConfig(command=JOB, run_root=str(runs), workdir=str(tmp_path))
    res = await launch(LocalTransport(), host, start_window=0.3, poll=0.05)
    assert res.ok, res.message
    yield host
    for d in sorted(runs.glob("2*")):
        await kill(LocalTransport(), host, run_id=d.name, grace=0.2, poll=0.05, check_gpu=False)


@pytest.mark.parametrize("source", ["nvidia-smi", "nvml"])
async def test_in_process_sample_is_the_subprocess_sample(
    fake_smi: Any, job: HostConfig, tmp_path: Path, source: str
) -> None:
    assert job.run_root is not None
    pid = int(next(Path(job.run_root).glob("2*/pid")).read_text().split()[0])
    gpus = box(8)
    gpus[2] = gpu(2, util=90, mem_used=40000)
    fake_smi.write(gpus, [app(pid, 2, 40000)])
    if source == "nvml":
        fake_smi.nvml()
    extra_log = tmp_path / "extra.log"
    extra_log.write_text("one\ntwo\n")
    host = HostConfig(
        command=job.command, run_root=job.run_root, workdir=job.workdir, logs=(str(extra_log),)
    )
    assert in_process(host)
    time.sleep(START_WINDOW_S)  # both samples see a run past its start window: "running"
    sub = await sample_once(LocalTransport(), host)
    here = LocalSample(host).result()
    assert here.telemetry.source == sub.telemetry.source == source
    assert here.run is not None and here.run.pid == pid
    assert [lg.lines for lg in here.logs] == [lg.lines for lg in sub.logs]
    assert {p.pid for p in here.gpu_procs} == {pid}
    a, b = (stable(host_document(host, s, False)[0]) for s in (sub, here))
    assert a == b
    assert a["run"]["state"] == "running" and a["gpus"][2]["processes"][0]["pid"] == pid


def test_a_sample_past_its_timeout_is_a_transport_error(
    fake_smi: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SMI_DELAY", "30")  # the fake answers late, as a wedged tool would
    t0 = time.monotonic()
    # --no-nvml: the stand-in nvidia-smi is what hangs (with a real NVML it would answer)
    sample = LocalSample(HostConfig(run_root=str(tmp_path)), timeout=0.5, extra=("--no-nvml",))
    with pytest.raises(TransportError, match="did not finish a sample within"):
        sample.result()
    assert time.monotonic() - t0 < 15  # given up at the timeout, not at the tool's answer
    assert sample.thread.daemon  # the stuck sample cannot keep the program alive


def test_a_container_or_another_python_is_not_sampled_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert in_process(HostConfig())
    assert not in_process(HostConfig(container="docker:trainer"))
    assert not in_process(HostConfig(address="gpu-a"))
    monkeypatch.setenv("DFLASH_TUI_PYTHON", sys.executable)
    assert not in_process(HostConfig())


# Records every process `status` starts (the audit event of subprocess.Popen).
SPAWNS = (
    "import json, sys\n"
    "seen = []\n"
    "sys.addaudithook(lambda e, a: seen.append(a[1]) if e == 'subprocess.Popen' else None)\n"
    "from dflash_tui.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    "sys.stderr.write('SPAWNED ' + json.dumps([list(map(str, x)) for x in seen]) + '\\n')\n"
    "sys.exit(rc)\n"
)


def test_status_json_starts_no_probe_process(fake_smi: Any, tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-c", SPAWNS, "status", "--json", f"--run-root={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(res.stdout)  # the whole of stdout is the document: the probe printed none
    assert doc["telemetry"] == "nvidia-smi" and len(doc["gpus"]) == 8, res.stderr[-2000:]
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("SPAWNED ")]
    spawned = json.loads(line.split(" ", 1)[1])
    assert spawned and all(Path(argv[0]).name == "nvidia-smi" for argv in spawned), spawned
