"""Keeps the recent snapshots of one host and the run's progress; diagnoses on demand."""

from __future__ import annotations

from collections import deque

from dflash.topology import Topology
from tui.core.diagnose import Diagnosis, diagnose
from tui.core.metrics import Metric, Progress, advance, parse_line
from tui.core.snapshot import Snapshot
from tui.core.thresholds import DEFAULT, Thresholds


class Tracker:
    """Folds Snapshots in order; bounded history (``keep`` samples)."""

    def __init__(
        self, topology: Topology, th: Thresholds = DEFAULT, keep: int = 120, live: bool = True
    ) -> None:
        self.topology = topology
        self.th = th
        self.live = live
        self.history: deque[Snapshot] = deque(maxlen=keep)
        self.progress = Progress()
        self.metrics: deque[tuple[float, Metric]] = deque(maxlen=600)
        self._run_id: str | None = None

    def add(self, snap: Snapshot) -> Diagnosis:
        run_id = snap.run.id if snap.run else None
        if run_id != self._run_id:  # a new run: its step count starts again
            self._run_id, self.progress = run_id, Progress()
        self.history.append(snap)
        for log in snap.logs:
            if not log.is_run_log and any(x.is_run_log for x in snap.logs):
                continue  # progress comes from the run's own log when there is one
            for line in log.lines:
                m = parse_line(line)
                if m is not None:
                    self.progress = advance(self.progress, m, snap.time)
                    self.metrics.append((snap.time, m))
        return self.diagnose()

    def diagnose(self) -> Diagnosis:
        return diagnose(list(self.history), self.topology, self.th, self.progress, self.live)
