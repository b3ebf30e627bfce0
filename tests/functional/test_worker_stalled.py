"""The tiny DFlash pipeline (5 target + 3 drafter workers, on the CPU) launched through control,
with the stall hook on drafter 1 (DFLASH_STALL) and heartbeats every 0.5 s: the supervisor core
(the live probe, its samples through the Tracker) names that worker in ``worker-stalled`` once
it has been stuck for the stall limit, and no other worker; ``status`` (the table) prints the
workers' row with that one marked. On the CPU the workers have no GPU (the GPU labelling of
the finding is covered by tests/unit/test_machine_findings.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakes.proberun import ProbeStream

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import ALIVE_STATES
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.diagnosis.host_view import stall_limit
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.transport import LocalTransport

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
STALL_MIN_S = 6.0  # worker_stall_min_s for this test (the default is 60 s)
# Heartbeat (0.5 s) + probe interval (0.5 s) + a slow sample on a loaded 2-core machine.
LATE_S = 8.0


@pytest.fixture
async def root(tmp_path: Path) -> AsyncIterator[Path]:
    r = tmp_path / "runs"
    yield r
    await kill_latest(LocalTransport(), HostConfig(run_root=str(r)), grace=2.0, poll=0.05)


@pytest.mark.slow
async def test_a_stalled_drafter_is_named_within_the_limit(root: Path, tmp_path: Path) -> None:
    cmd = (
        f"{sys.executable} -m dflash_train.train --preset tiny --device cpu --steps 400 "
        "--stall-timeout 300"
    )
    env = "DFLASH_STALL=drafter:1:5:120 DFLASH_HEARTBEAT_S=0.5 PYTHONUNBUFFERED=1"
    host = HostConfig(command=f"PYTHONPATH={ROOT} {env} exec {cmd}", run_root=str(root))
    res = await launch(LocalTransport(), host, start_window=0.3, poll=0.05)
    assert res.ok, res
    th = Thresholds(worker_stall_min_s=STALL_MIN_S)
    tracker = Tracker(host.topology, th)
    found = None
    deadline = time.monotonic() + 240
    with ProbeStream(f"--run-root={root}", "--no-nvml", interval=0.5) as probe:
        while time.monotonic() < deadline and found is None:
            diag = tracker.add(Snapshot.from_dict(probe.next(60)))
            assert diag.run_state in ALIVE_STATES, (diag.run_state, diag.findings)
            stalled = [f for f in diag.findings if f.code == "worker-stalled"]
            if stalled:
                found = (diag, stalled, stall_limit(th, tracker.progress))
    assert found is not None, "worker-stalled never said"
    diag, stalled, limit = found
    assert len(stalled) == 1 and stalled[0].message.startswith("drafter 1 has made no progress")
    assert "at step 5" in stalled[0].message and stalled[0].gpus == ()  # no GPU on the CPU
    d1 = next(w for w in diag.workers if (w.role, w.index) == ("drafter", 1))
    assert d1.state == "work" and d1.step == 5 and d1.since is not None
    stuck = diag.time - d1.since
    assert limit <= stuck <= limit + LATE_S, (stuck, limit)
    # the others beat and wait on it: the other drafters at the step barrier
    others = [w for w in diag.workers if w is not d1]
    assert {(w.role, w.index) for w in others} >= {("drafter", 0), ("drafter", 2)} | {
        ("target", j) for j in range(5)
    }
    assert all(diag.time - (w.time or 0) < limit for w in others)
    assert all(w.state == "wait:barrier" for w in others if w.role == "drafter")
    waiting = sum(1 for w in others if (w.state or "").startswith("wait"))
    assert f"{waiting} of the {len(others)} other workers wait on it" in stalled[0].message
    print(f"worker-stalled after {stuck:.1f} s stuck (limit {limit:.1f} s)")

    config = tmp_path / "c.toml"
    config.write_text(f"[thresholds]\nworker_stall_min_s = {STALL_MIN_S}\n")
    table = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--config", str(config),
         "--run-root", str(root)],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, COLUMNS="400"),
    )  # fmt: skip
    row = next(ln for ln in table.stdout.splitlines() if ln.startswith("workers: "))
    cells = row.removeprefix("workers: ").split(", ")
    assert [c for c in cells if "BEHIND" in c] == [c for c in cells if c.startswith("D1 s5")]
    assert len(cells) == 9 and cells[0].startswith("L s")  # the loader, 5 targets, 3 drafters


@pytest.mark.slow
async def test_a_stalled_drafter_on_rank_1_is_named_through_rank_0(
    root: Path, tmp_path: Path
) -> None:
    """Under torchrun only rank 0 writes the event stream: rank 1's heartbeats reach it through
    the job's c10d store, so a drafter stalled on rank 1 is named with its rank while rank 0's
    workers all wait on the cross-rank gradient reduction."""
    cmd = (
        f"{sys.executable} -m torch.distributed.run --standalone --nproc-per-node 2 "
        "--max-restarts 0 -m dflash_train.train --preset tiny --device cpu --target-workers 1 "
        "--drafter-workers 2 --threads 1 --eval-batches 0 --gen-samples 48 --steps 400 "
        "--dist-timeout 300 --stall-timeout 300"
    )
    env = "DFLASH_STALL=drafter:1:5:120:rank:1 DFLASH_HEARTBEAT_S=0.5 PYTHONUNBUFFERED=1"
    host = HostConfig(command=f"PYTHONPATH={ROOT} {env} exec {cmd}", run_root=str(root))
    res = await launch(LocalTransport(), host, start_window=0.3, poll=0.05)
    assert res.ok, res
    th = Thresholds(worker_stall_min_s=STALL_MIN_S)
    tracker = Tracker(host.topology, th)
    found = None
    deadline = time.monotonic() + 240
    try:
        with ProbeStream(f"--run-root={root}", "--no-nvml", interval=0.5) as probe:
            while time.monotonic() < deadline and found is None:
                diag = tracker.add(Snapshot.from_dict(probe.next(60)))
                assert diag.run_state in ALIVE_STATES, (diag.run_state, diag.findings)
                stalled = [f for f in diag.findings if f.code == "worker-stalled"]
                if stalled:
                    found = (diag, stalled)
    finally:
        _kill_ranks(Path(res.dir or "") / "events.jsonl")
    assert found is not None, "worker-stalled never said"
    diag, stalled = found
    assert len(stalled) == 1, stalled
    assert stalled[0].message.startswith("rank 1 drafter 1 has made no progress"), stalled
    ranks = {(w.rank, w.role, w.index) for w in diag.workers}
    assert {(r, "drafter", i) for r in (0, 1) for i in (0, 1)} <= ranks
    assert {(r, "target", 0) for r in (0, 1)} <= ranks
    mine = [w for w in diag.workers if w.rank == 0 and w.role == "drafter"]
    assert all(w.state == "wait:barrier" for w in mine)  # rank 0 waits on the reduction


def _kill_ranks(events: Path) -> None:
    """The torchrun workers by the PIDs rank 0 recorded (they may outlive torchrun's group)."""
    from dflash_train.events import read_events

    for e in read_events(events):
        if e.get("event") == "distributed":
            for r in e.get("ranks", []):
                try:
                    os.kill(int(r["pid"]), 9)
                except (ProcessLookupError, KeyError, ValueError):
                    pass
