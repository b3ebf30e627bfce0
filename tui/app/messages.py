"""Typed messages from the feed workers and the control actions to the screen. Each carries
the key of the host it is about (tui/app/host/state.py), so every host is drawn in its own view."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import Diagnosis
from dflash_tui.core.diagnosis.progress import Metric, Progress
from dflash_tui.core.diagnosis.timeline import Event


@dataclass
class SampleReady(Message):
    """A sample of host ``host`` arrived and was diagnosed (the heavy work ran off the UI
    thread)."""

    host: str
    snapshot: Snapshot
    diagnosis: Diagnosis
    progress: Progress
    metrics: tuple[tuple[float, Metric], ...]
    events: tuple[Event, ...]  # new timeline events of this sample


@dataclass
class LinkDown(Message):
    """The probe stream of ``host`` broke; its feed retries in ``retry_in`` seconds."""

    host: str
    error: str
    retry_in: float


@dataclass
class SampleMalformed(Message):
    """A probe line of ``host`` that could not be parsed."""

    host: str
    error: str


@dataclass
class ControlStep(Message):
    """Progress of a long control action on ``host`` (kill grace, memory release, start
    window)."""

    host: str
    text: str
    done: float | None = None
    total: float | None = None


@dataclass
class ControlDone(Message):
    """A control action on ``host`` ended: ``ok`` False means it failed or was cancelled."""

    host: str
    action: str
    ok: bool
    text: str
