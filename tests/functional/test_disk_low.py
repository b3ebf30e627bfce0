"""A run root on a real tmpfs of 6 MiB, a real job launched there that saves a 1 MiB
checkpoint every 2 s until the filesystem is full: the supervisor core (the live probe, its
samples through the Tracker) says ``disk-low`` while the job still runs, and says the next
checkpoint does not fit before the save that fails; then the job fails (no space left).
``status`` (the table) shows the run root's free space on its machine line and the finding."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakes.proberun import ProbeStream
from faults.control_faults import tmpfs

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import ALIVE_STATES
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.transport import LocalTransport

JOB = """
import os, sys, time
d = os.path.join(os.environ["DFLASH_RUN_DIR"], "checkpoints")
os.makedirs(d)
for step in range(1, 100):
    time.sleep(2.0)
    path = os.path.join(d, "step_%08d.pt" % step)
    try:
        with open(path, "wb") as f:
            f.write(os.urandom(1 << 20))
    except OSError as exc:
        os.unlink(path)  # what a failed save leaves, removed: the run's exit file needs room
        print("checkpoint %d failed: %s" % (step, exc), flush=True)
        sys.exit(1)
    print("saved", path, flush=True)
"""


@pytest.fixture
async def root(tmp_path: Path) -> AsyncIterator[Path]:
    with tmpfs(tmp_path / "runs", "6m") as r:
        yield r
        await kill_latest(LocalTransport(), HostConfig(run_root=str(r)), grace=0.5, poll=0.05)


async def test_disk_low_is_said_before_the_job_fails(root: Path, tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    host = HostConfig(command=f"{sys.executable} -u {job}", run_root=str(root))
    res = await launch(LocalTransport(), host, start_window=0.3, poll=0.05)
    assert res.ok, res
    tracker = Tracker(host.topology)
    first_low = no_room = None  # (step files on disk, run state) when each was first said
    deadline = time.monotonic() + 90
    with ProbeStream(f"--run-root={root}", "--no-nvml", interval=0.3) as probe:
        while time.monotonic() < deadline:
            diag = tracker.add(Snapshot.from_dict(probe.next()))
            low = [f for f in diag.findings if f.code == "disk-low"]
            saved = len(list((Path(res.dir or "") / "checkpoints").glob("step_*.pt")))
            if low and first_low is None:
                first_low = (saved, diag.run_state, low[0].message)
            if low and "does NOT fit" in low[0].message and no_room is None:
                no_room = (saved, diag.run_state, low[0])
            if diag.run_state not in ALIVE_STATES:
                break
    assert first_low is not None and first_low[1] in ALIVE_STATES, first_low
    assert f"run root {root}" in first_low[2] and "shrinking" in first_low[2]
    assert no_room is not None and no_room[1] in ALIVE_STATES, no_room
    assert no_room[2].severity == "error" and "the next checkpoint (1 MiB)" in no_room[2].message
    assert diag.run_state == "exited" and diag.run is not None and diag.run.exit_code == 1
    log = (Path(res.dir or "") / "output.log").read_text()
    assert "No space left on device" in log
    # the failing save came after the warning: one more checkpoint was attempted
    failed_step = int(log.split("checkpoint ")[1].split(" failed")[0])
    assert failed_step == no_room[0] + 1

    table = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--run-root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, COLUMNS="400"),
    )
    machine = next(ln for ln in table.stdout.splitlines() if ln.startswith("machine: "))
    assert f"run root, out dir {root}: " in machine and "[LOW]" in machine, machine
    assert "free of 6 MiB" in machine and "RAM " in machine and "swap " in machine
    assert "disk-low" in table.stdout and "does NOT fit" in table.stdout
