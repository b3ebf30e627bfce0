"""A host's sample once diagnosed: what its pane, its overview row and its alerts are drawn
from. It carries the key of its host (tui/app/host/state.py), so every host is drawn in its own
view."""

from __future__ import annotations

from dataclasses import dataclass

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.progress import Metric, Progress
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.views import Diagnosis


@dataclass
class SampleReady:
    """A sample of host ``host``, diagnosed (the heavy work ran off the UI thread)."""

    host: str
    snapshot: Snapshot
    diagnosis: Diagnosis
    progress: Progress
    metrics: tuple[tuple[float, Metric], ...]
    events: tuple[Event, ...]  # new timeline events of this sample
    job: str | None = None  # under Slurm: the job's line for the header (host/slurm.py)
