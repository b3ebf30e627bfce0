"""A run's long history, bounded: loss and tok/s of every step event the probe sent (the whole
run, from its event stream) and each GPU's utilisation, memory and power over time (from the
samples), for the History tab.

Each series keeps at most ``capacity`` points. When it is full it halves its resolution (keeps
every second point, the first one always) and from then on keeps one new point in two, then
one in four, ...: the whole span stays, at an even density, in bounded memory, instead of the
start being dropped as a ring buffer would. Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dflash_tui.core.base.snapshot import Snapshot, StepPoints

CAPACITY = 2048  # points per series (a few columns per point on the widest terminal)
# The time windows `z` cycles through, in seconds (None: the whole run).
ZOOMS: tuple[float | None, ...] = (None, 3600.0, 300.0)

Point = tuple[float, float]  # (x, y): x is a time in seconds, or a step number


class Thinned:
    """One series of (x, y) points in ascending x, bounded by halving its resolution.

    The points are two arrays of doubles (x and y): 16 bytes a point, where a list of (x, y)
    tuples held about 88 (a tuple and two floats). A host has 24 GPU series plus loss and
    tok/s, each up to ``capacity`` points, kept for as long as the app runs."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 4:
            raise ValueError("capacity must be at least 4")
        self.capacity = capacity
        self.stride = 1  # one point kept of every `stride` offered
        self._xs = array("d")
        self._ys = array("d")
        self._offered = 0  # points offered since the last kept one

    def add(self, x: float, y: float) -> None:
        if not (math.isfinite(x) and math.isfinite(y)):
            return  # a nan/inf loss is a finding elsewhere; a plot cannot draw it
        xs = self._xs
        if xs and x < xs[-1]:
            return  # out of order (a clock step back): the series stays sorted
        self._offered += 1
        if xs and self._offered < self.stride:
            return
        self._offered = 0
        xs.append(x)
        self._ys.append(y)
        if len(xs) > self.capacity:
            # Keep the first point and every second one after it: the span is kept whole.
            self._xs, self._ys = xs[::2], self._ys[::2]
            self.stride *= 2

    def points(self) -> list[Point]:
        return list(zip(self._xs, self._ys, strict=True))

    def span(self) -> tuple[float, float] | None:
        return (self._xs[0], self._xs[-1]) if self._xs else None

    def __len__(self) -> int:
        return len(self._xs)


def window(points: Sequence[Point], lo: float, hi: float) -> list[Point]:
    """The points with lo <= x <= hi."""
    return [p for p in points if lo <= p[0] <= hi]


def decimate(points: Sequence[Point], most: int) -> list[Point]:
    """At most about ``most`` points for a plot that cannot draw more: the points in buckets
    of consecutive ones, each bucket's lowest and highest kept (in order), so a short dip or
    spike still shows where plain thinning would skip it."""
    if len(points) <= most or most < 2:
        return list(points)
    size = math.ceil(len(points) / (most // 2))
    out: list[Point] = []
    for i in range(0, len(points), size):
        bucket = points[i : i + size]
        lo, hi = min(bucket, key=lambda p: p[1]), max(bucket, key=lambda p: p[1])
        out.extend(sorted({lo, hi}))
    return out


@dataclass
class GpuHistory:
    """One GPU's readings over time: utilisation %, memory used %, power in W."""

    util: Thinned = field(default_factory=Thinned)
    mem: Thinned = field(default_factory=Thinned)
    power: Thinned = field(default_factory=Thinned)


@dataclass
class RunHistory:
    """What the History tab plots for one host. ``steps_path`` is the event stream the step
    points came from: a new path (another run) or a stream read again from its start (a new
    probe after the link came back, a truncated file) starts the step series afresh."""

    capacity: int = CAPACITY
    steps_path: str | None = None
    loss: Thinned = field(init=False)
    tok_s: Thinned = field(init=False)
    gpus: dict[int, GpuHistory] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.loss, self.tok_s = Thinned(self.capacity), Thinned(self.capacity)

    def add(self, snap: Snapshot) -> None:
        """Fold one sample: its GPU readings and the step events it carries."""
        for g in snap.gpus:
            h = self.gpus.get(g.index)
            if h is None:
                h = self.gpus[g.index] = GpuHistory(
                    Thinned(self.capacity), Thinned(self.capacity), Thinned(self.capacity)
                )
            if g.util is not None:
                h.util.add(snap.time, float(g.util))
            if g.mem_used_mib is not None and g.mem_total_mib:
                h.mem.add(snap.time, 100.0 * g.mem_used_mib / g.mem_total_mib)
            if g.power_w is not None:
                h.power.add(snap.time, g.power_w)
        if snap.steps is not None:
            self.add_steps(snap.steps)

    def add_steps(self, steps: StepPoints) -> None:
        if steps.path != self.steps_path or steps.start == 0:
            self.steps_path = steps.path
            self.loss, self.tok_s = Thinned(self.capacity), Thinned(self.capacity)
        for t, _step, loss, tok_s in steps.points:
            if loss is not None:
                self.loss.add(t, loss)
            if tok_s is not None:
                self.tok_s.add(t, tok_s)

    def span(self) -> tuple[float, float] | None:
        """The first and last time of anything recorded."""
        spans = [s for s in (ser.span() for ser in self.series()) if s is not None]
        if not spans:
            return None
        return min(s[0] for s in spans), max(s[1] for s in spans)

    def series(self) -> Iterable[Thinned]:
        yield self.loss
        yield self.tok_s
        for h in self.gpus.values():
            yield from (h.util, h.mem, h.power)


@dataclass(frozen=True)
class View:
    """The time window shown: ``zoom`` indexes ZOOMS; ``back`` is how many half-windows the
    window's right edge sits before the newest point (0: it follows the newest)."""

    zoom: int = 0
    back: int = 0

    def next_zoom(self) -> View:
        return View((self.zoom + 1) % len(ZOOMS), 0)

    def pan(self, halves: int, span: tuple[float, float] | None) -> View:
        """Move by ``halves`` half-windows (negative: back in time), within the span."""
        width = ZOOMS[self.zoom]
        if width is None or span is None:
            return self
        most = max(0, math.ceil((span[1] - span[0] - width) / (width / 2)))
        return View(self.zoom, min(most, max(0, self.back - halves)))

    def bounds(self, span: tuple[float, float] | None) -> tuple[float, float] | None:
        """The (lo, hi) times shown, clamped so the window never leaves the recorded span."""
        if span is None:
            return None
        first, last = span
        width = ZOOMS[self.zoom]
        if width is None or width >= last - first:
            return first, last
        hi = max(last - self.back * width / 2, first + width)
        return hi - width, hi

    def label(self) -> str:
        width = ZOOMS[self.zoom]
        if width is None:
            return "whole run"
        name = f"{width / 3600:g} h" if width >= 3600 else f"{width / 60:g} min"
        return f"last {name}" if self.back == 0 else f"{name} window"
