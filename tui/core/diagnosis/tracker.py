"""Keeps the recent snapshots of one host and the run's progress; diagnoses on demand."""

from __future__ import annotations

from collections import deque

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose, window_s
from dflash_tui.core.diagnosis.progress import Metric, Progress, advance, newest_metrics
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis

# Metric lines kept: what the app reads of them (SampleReady carries the newest 200, for the
# metrics strip's sparklines; a replay the same). Also how many lines a flood's sample parses.
METRICS_KEPT = 200


class Tracker:
    """Folds Snapshots in order; bounded history: the diagnosis' window (60 s by default), at
    most ``keep`` samples.

    The history is bounded, but how long a label or a missing log has held is not: each new
    diagnosis inherits the ``since`` of the same unbroken state from the one before it.
    """

    def __init__(
        self, topology: Topology, th: Thresholds = DEFAULT, keep: int = 120, live: bool = True
    ) -> None:
        self.topology = topology
        self.th = th
        self.live = live
        self.history: deque[Snapshot] = deque(maxlen=keep)
        self.progress = Progress()
        self.metrics: deque[tuple[float, Metric]] = deque(maxlen=METRICS_KEPT)
        self._run_id: str | None = None
        self._last: Diagnosis | None = None
        self._was: tuple[Proc, ...] = ()  # the process records the newest kept copy gave up

    def add(self, snap: Snapshot) -> Diagnosis:
        run_id = snap.run.id if snap.run else None
        if run_id != self._run_id:  # a new run: its step count starts again
            self._run_id, self.progress = run_id, Progress()
        self._fold_metrics(snap)
        # The history feeds the diagnosis, which never reads log text: keep it without the
        # lines, or a minute of samples of a flooding log would hold hundreds of MiB.
        self.history.append(snap.without_log_lines())  # its PID index with it
        self._prune(snap.time)
        self._last = self.diagnose()
        # What later diagnoses read of this sample is kept on it (its views, its run's
        # members, its table's groups and commands): its process records are not needed again.
        # The records it gives up are kept for the next sample's (one table, which the
        # stream's parser holds anyway): its rows found by identity.
        history = self.history
        before = history[-2] if len(history) > 1 else None
        self._was = history[-1].keep_for_window(before, self._was if before else ())
        return self._last

    def _prune(self, now: float) -> None:
        """Samples older than the diagnosis' window (60 s by default) are never read again:
        at 1 Hz half of the ``keep`` samples would be held for nothing, on every host."""
        span, history = window_s(self.th), self.history
        while len(history) > 1 and now - history[0].time > span:
            history.popleft()

    def _fold_metrics(self, snap: Snapshot) -> None:
        # Progress comes from the run's own log when there is one.
        logs = [x for x in snap.logs if x.is_run_log] or snap.logs
        lines = [line for log in logs for line in log.lines]
        # Only what the bounded deque would keep is parsed: a flood of 2,000 step lines a
        # sample parses its last 200, the same metrics and the same last step as all of them.
        found = newest_metrics(lines, METRICS_KEPT)
        self.metrics.extend((snap.time, m) for m in found)
        last_step = next((m for m in reversed(found) if m.step is not None), None)
        if last_step is not None:
            # One fold per sample: many steps arriving together share one arrival time, so
            # the time per step is the sample's time over the steps it brought.
            self.progress = advance(self.progress, last_step, snap.time)

    def diagnose(self) -> Diagnosis:
        return diagnose(
            list(self.history), self.topology, self.th, self.progress, self.live, self._last
        )
