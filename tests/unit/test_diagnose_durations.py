"""Durations start when the data shows the condition began: a label that held at the first
sample is an "at least", carried as such from sample to sample; a GPU idle since its run
ended takes the run's recorded end as its start."""

from __future__ import annotations

from fakes.rows import gpu_row as gpu
from fakes.rows import proc_row as proc

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.tracker import Tracker

T0 = 1_764_669_600.0
TOPO = Topology.parse("0:1")


def snap(t: float, run: dict[str, object] | None = None, busy: bool = False) -> Snapshot:
    return Snapshot.from_dict({
        "time": t, "host": "box", "telemetry": {"source": "nvidia-smi"},
        "gpus": [gpu(0, 0, 90 if busy else 0), gpu(1, 0, 0)], "procs": [proc(1, 0)], "run": run,
    })  # fmt: skip


def idle(tracker: Tracker, s: Snapshot) -> tuple[float, bool]:
    (label,) = tracker.add(s).gpus[1].labels
    assert label.code == "idle"
    return label.since, label.at_least


def test_a_label_held_from_the_first_sample_stays_an_at_least() -> None:
    tracker = Tracker(TOPO, live=True)
    assert idle(tracker, snap(T0)) == (T0, True)
    for k in range(1, 40):  # past the diagnosis window: the start is still not known
        assert idle(tracker, snap(T0 + 2 * k)) == (T0, True)


def test_a_label_seen_to_begin_has_a_known_start() -> None:
    tracker = Tracker(TOPO, live=True)
    for k in range(5):
        tracker.add(snap(T0 + 2 * k, busy=True))  # GPU 0 busy: GPU 1 is idle from the start
    got = tracker.add(snap(T0 + 10)).gpus[0].labels  # GPU 0 goes idle now: seen to begin
    assert [(lb.code, lb.at_least) for lb in got] == [("idle", False)]
    assert got[0].since == T0 + 10  # the sample that saw it begin


def test_idle_after_a_run_ended_counts_from_the_recorded_end() -> None:
    ended = T0 - 360
    run = {"id": "r", "dir": "/runs/r", "pid": 50, "pgid": 50, "started_at": T0 - 4000,
           "exit_code": 1, "ended_at": ended}  # fmt: skip
    tracker = Tracker(TOPO, live=True)
    assert idle(tracker, snap(T0, run)) == (ended, False)  # "idle 6m", not "idle 0s"
    assert idle(tracker, snap(T0 + 2, run)) == (ended, False)
