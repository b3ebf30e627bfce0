"""The run's membership is judged twice: in Python from a probe sample (the app's process
tree, the diagnosis, the kill dialog's fallback) and in control.sh on the host (what kill
signals). Both rules see the same real processes here and must agree: the group members with
the leader alive and with the leader gone, and the processes that left the group (setsid),
which only control.sh can find (by the DFLASH_RUN_DIR marker in their environment)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport, group_members
from dflash_tui.core.control.kill import kill
from dflash_tui.core.control.launch import launch
from dflash_tui.core.control.script import fetch_run
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.transport import LocalTransport

# Each job writes the PIDs it started, so the test knows the truth without either rule.
JOBS = {
    "leader alive": "sleep 60 & echo $! >> pids; sleep 60 & echo $! >> pids; wait",
    "leader gone": "(sleep 60 & echo $! >> pids) ; (sleep 60 & echo $! >> pids); exit 0",
    "one left the group": ("sleep 60 & echo $! >> pids; setsid sleep 60 & echo $! >> strays; wait"),
}


@pytest.fixture
async def root(tmp_path: Path) -> AsyncIterator[Path]:
    runs = tmp_path / "runs"
    yield runs
    for d in sorted(runs.glob("2*")):  # the recorded groups (and strays), verified, only
        await kill(LocalTransport(), HostConfig(run_root=str(runs)), run_id=d.name, grace=0.2,
                   poll=0.05, check_gpu=False)  # fmt: skip


async def settled(t: LocalTransport, h: HostConfig, want: int) -> RunReport:
    """control.sh's reading once the job has started ``want`` processes (or after 5 s)."""
    end = time.monotonic() + 5
    rep = await fetch_run(t, h.run_root)
    while time.monotonic() < end and len(rep.members) < want:
        await asyncio.sleep(0.05)
        rep = await fetch_run(t, h.run_root)
    return rep


def pids_in(path: Path) -> set[int]:
    return {int(x) for x in path.read_text().split()} if path.exists() else set()


@pytest.mark.parametrize("case", list(JOBS))
async def test_python_and_shell_agree_on_the_members(root: Path, tmp_path: Path, case: str) -> None:
    t = LocalTransport()
    h = HostConfig(command=JOBS[case], run_root=str(root), workdir=str(tmp_path))
    res = await launch(t, h, start_window=0.3, poll=0.05)
    assert res.ok, res.message
    started, strays = pids_in(tmp_path / "pids"), pids_in(tmp_path / "strays")
    rep = await settled(t, h, len(started) + len(strays))
    snap = await sample_once(t, h)
    assert snap.run is not None and rep.record is not None and snap.run.id == rep.record.id
    python = {p.pid for p in group_members(snap.run, snap.procs)}
    shell_group = {p.pid for p in rep.members if p.pgid == rep.record.pgid}
    shell_strays = {p.pid for p in rep.members if p.pgid != rep.record.pgid}
    assert python == shell_group
    assert started <= python, "every process the job started in its group is a member"
    assert shell_strays == strays, "control.sh finds exactly the processes that left the group"
    if case == "leader gone":
        assert res.pid not in python and python == started
