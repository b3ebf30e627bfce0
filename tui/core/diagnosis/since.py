"""When a state began: a run still starting up (its quiet GPUs are not idle), and the start
of a label or a missing log carried from one diagnosis to the next, with whether that start
is known or only a bound (it held at the first sample there is)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.ownership import run_alive
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.thresholds import Thresholds

if TYPE_CHECKING:
    from dflash_tui.core.diagnosis.views import Label, LogView


def starting_up(snap: Snapshot, th: Thresholds, progress: Progress | None = None) -> bool:
    """The sample's run is starting: in its start window, or alive and not stepped yet (no
    step event, no step in its log) within the start-up grace: the model loads, kernels
    compile, and its GPUs are quiet by design."""
    run = snap.run
    if run is None or not run_alive(snap):
        return False
    if run.started_at is None:  # the launcher is still setting it up
        return True
    stepped = (snap.last_step is not None and snap.last_step.step is not None) or (
        progress is not None and progress.last_step_at is not None
    )
    return snap.time - run.started_at < (th.start_window_s if stepped else th.startup_grace_s)


def began(label: Label, snap: Snapshot) -> Label:
    """A GPU idle since before the first sample, after its run ended: the record says when
    it began (the run's end), so its duration is known."""
    ended = snap.run.ended_at if snap.run is not None else None
    if label.code == "idle" and label.at_least and ended is not None and ended <= label.since:
        return replace(label, since=ended, at_least=False)
    return label


def carried(label: Label, was: Label | None) -> Label:
    """``label`` as it holds on from the previous diagnosis: the earlier start (and whether
    that start is only a lower bound) wins."""
    if was is None or was.since > label.since:
        return label
    if was.code == label.code:  # the label with the earlier start and bound: ``was`` itself
        return was
    return replace(label, since=was.since, at_least=was.at_least)


def carried_log(log: LogView, was: LogView | None) -> LogView:
    """A log still missing keeps the earlier sighting (and whether it is only a bound)."""
    if log.missing_since is None or was is None or was.missing_since is None:
        return log
    if was.missing_since > log.missing_since:
        return log
    return replace(log, missing_since=was.missing_since, missing_at_least=was.missing_at_least)
