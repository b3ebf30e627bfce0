"""Typed messages from the feed worker and the control actions to the screen."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from tui.app.findings.timeline import Event
from tui.core.diagnose import Diagnosis
from tui.core.metrics import Metric, Progress
from tui.core.snapshot import Snapshot


@dataclass
class SampleReady(Message):
    """A sample arrived and was diagnosed (the heavy work ran off the UI thread)."""

    snapshot: Snapshot
    diagnosis: Diagnosis
    progress: Progress
    metrics: tuple[tuple[float, Metric], ...]
    events: tuple[Event, ...]  # new timeline events of this sample


@dataclass
class LinkDown(Message):
    """The probe stream broke; the feed retries in ``retry_in`` seconds."""

    error: str
    retry_in: float


@dataclass
class SampleMalformed(Message):
    """A probe line that could not be parsed."""

    error: str


@dataclass
class ControlStep(Message):
    """Progress of a long control action (kill grace, memory release, start window)."""

    text: str
    done: float | None = None
    total: float | None = None


@dataclass
class ControlDone(Message):
    """A control action ended: ``ok`` False means it failed or was cancelled."""

    action: str
    ok: bool
    text: str
