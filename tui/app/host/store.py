"""What one host's detail pane shows, kept apart from its widgets.

Every host folds each sample into its ``PaneStore`` whether its pane is on screen or not: the
GPUs' sparklines and label times, the log tails' lines, the timeline's events, the History
tab's series. The pane's widgets are made the first time the host is shown (a host never
looked at costs no widgets) and read what they draw from here; a hidden pane draws nothing,
and draws what it missed from here when it is shown again (tui/app/host/pane.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dflash_tui.app.host.gpus.panel import GpuPanel
from dflash_tui.app.host.logs.lines import DEFAULT_FILTER, LineStore, compile_filter
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.snapshot import LogState, Snapshot
from dflash_tui.core.diagnosis.history import RunHistory
from dflash_tui.core.diagnosis.timeline import MAX_EVENTS, Event
from dflash_tui.core.diagnosis.views import Diagnosis, LogView


def _quiet_store() -> LineStore:
    store = LineStore()
    store.quiet = True  # until a tail draws it (LogTail.flush)
    return store


@dataclass
class TailData:
    """One log's lines and file state, for its tail (tui/app/host/logs/tail.py)."""

    path: str
    is_run_log: bool
    store: LineStore = field(default_factory=_quiet_store)  # loud once a tail draws it
    view: LogView | None = None
    now: float = 0.0
    missing_from: float | None = None  # our own first sighting of the file missing
    missing_at_least: bool = False  # it was missing at the first sample: since is a bound

    def add_sample(self, log: LogState) -> None:
        """The sample's lines with the probe's gap notes in place: every line the tail could
        not show, or anything it had to say (a rotation, a cut line), is marked where it
        happened."""
        if log.truncated and not log.gaps:  # a probe that does not say more (shell)
            self.store.mark("the file was truncated or replaced; tail restarted")
        items: list[tuple[bool, str]] = []
        at = 0
        for index, text in sorted(log.gaps, key=lambda g: g[0]):
            index = min(max(index, at), len(log.lines))
            items += [(False, x) for x in log.lines[at:index]]
            items.append((True, text))
            at = index
        items += [(False, x) for x in log.lines[at:]]
        if items:
            self.store.add_sample(items)

    def set_state(self, view: LogView | None, now: float) -> None:
        self.view, self.now = view, now
        if view is None or view.exists:
            self.missing_from, self.missing_at_least = None, False
            return
        known = view.missing_since is not None
        since = view.missing_since if view.missing_since is not None else now
        # Missing at the first sample there is: it went missing before, when is not known,
        # so the duration is a bound ("at least"), as the finding says.
        bound = view.missing_at_least if known else True
        # The diagnosis only looks back a minute; remember the earliest sighting ourselves.
        if self.missing_from is None or since < self.missing_from:
            self.missing_from, self.missing_at_least = since, bound
        elif since == self.missing_from:
            self.missing_at_least = self.missing_at_least and bound


class PaneStore:
    """One host's accumulated view data: GPU panels, log tails, events, history."""

    def __init__(self) -> None:
        self.panels: dict[int, GpuPanel] = {}
        self.logs: dict[str, TailData] = {}
        self.events: list[Event] = []
        self.history = RunHistory()
        self.samples = 0  # samples folded (the History tab plots again when this moved)
        # The log filter new tails start with (on at start: errors, exceptions, progress);
        # the log area sets it while it is built.
        self.log_pattern: re.Pattern[str] | None = compile_filter(DEFAULT_FILTER)

    def shelve(self) -> None:
        """The pane's widgets are gone: every log's lines are shelved."""
        for data in self.logs.values():
            data.store.shelve()

    def fold(
        self, snap: Snapshot, diag: Diagnosis, events: Sequence[Event], shelve: bool = False
    ) -> None:
        """One diagnosed sample and the timeline events it brought; ``shelve``: no widget
        holds the pane's log lines (not made yet, or removed), so a new log's are shelved
        (tui/app/host/logs/lines.py, SHELF_LINES) until a tail draws them."""
        self.samples += 1
        self.fold_gpus(diag)
        self.fold_logs(snap.logs, diag, shelve)
        self.add_events(events)
        self.history.add(snap)

    def fold_gpus(self, diag: Diagnosis) -> None:
        active = diag.run_state in ACTIVE
        seen = set()
        for view in diag.gpus:
            seen.add(view.index)
            panel = self.panels.get(view.index)
            if panel is None:
                panel = self.panels[view.index] = GpuPanel(view.index)
            panel.show(view, diag.time, active)
        for index in [i for i in self.panels if i not in seen]:
            del self.panels[index]

    def fold_logs(self, logs: Sequence[LogState], diag: Diagnosis, shelve: bool = False) -> None:
        """Each log's new lines to its tail's data; a new log gets one, a gone one loses it."""
        views = {v.path: v for v in diag.logs}
        for log in logs:
            data = self.logs.get(log.path)
            if data is None:
                data = self.logs[log.path] = TailData(log.path, log.is_run_log)
                data.store.pattern = self.log_pattern
                if shelve:
                    data.store.shelve()
            data.add_sample(log)
            view = views.get(log.path)
            if view is not None and log.is_run_log and diag.run and diag.run.started_at:
                # The run's log should exist from launch on: missing since the launch.
                data.missing_from = diag.run.started_at if not view.exists else None
            data.set_state(view, diag.time)
        present = {x.path for x in logs}
        for path in [p for p in self.logs if p not in present]:
            del self.logs[path]

    def add_events(self, events: Sequence[Event]) -> None:
        if events:
            # In time order: a sample reports a crash at its end time, after auto-restart's
            # decisions about it arrived (sorted() is stable: ties keep their arrival order).
            self.events = sorted(self.events + list(events), key=lambda e: e.time)[-MAX_EVENTS:]

    def ordered_logs(self) -> list[TailData]:
        """The tails in the order they are shown: the run's log first, then as they came."""
        return sorted(self.logs.values(), key=lambda d: not d.is_run_log)
