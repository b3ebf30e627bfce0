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
from typing import Protocol

from dflash_tui.core.base.snapshot import Snapshot, StepPoints

CAPACITY = 2048  # points per series (a few columns per point on the widest terminal)
# The time windows `z` cycles through, in seconds (None: the whole run).
ZOOMS: tuple[float | None, ...] = (None, 3600.0, 300.0)

Point = tuple[float, float]  # (x, y): x is a time in seconds, or a step number


class Thinned:
    """Series of (x, y) points in ascending x, ``width`` of them sampled at the same x (one
    GPU's utilisation, memory and power), bounded by halving their resolution together.

    The x coordinates are one array of doubles shared by the columns, and each column's y an
    array of ``typecode`` ("d": doubles; "f": 4-byte floats, for readings a plot never draws
    finer than a few hundred rows): a GPU's three series hold 20 bytes a point where three
    series of their own held 48, and a list of (x, y) tuples about 88. A host has 8 GPUs' and
    the run's loss and tok/s, each up to ``capacity`` points, kept for as long as the app runs.
    A reading that is missing or not finite is a gap in its column (NaN); a sample with none
    is not kept. The columns are thinned together, so a kept point's gap takes a reading of
    the rows it stands for (those thinning dropped after it): at most a stride away in x."""

    def __init__(self, capacity: int = CAPACITY, width: int = 1, typecode: str = "d") -> None:
        if capacity < 4:
            raise ValueError("capacity must be at least 4")
        if typecode not in ("d", "f"):
            raise ValueError("readings are floats: typecode 'd' or 'f'")  # a gap is a NaN
        self.capacity = capacity
        self.stride = 1  # one point kept of every `stride` offered
        self._xs = array("d")
        self._cols: list[array[float]] = [array(typecode) for _ in range(width)]
        self._offered = 0  # points offered since the last kept one

    def add(self, x: float, y: float) -> None:
        self.add_row(x, (y,))

    def add_row(self, x: float, ys: Sequence[float | None]) -> None:
        """One point of every column at ``x`` (None: that column has no reading)."""
        row = [math.nan if y is None or not math.isfinite(y) else y for y in ys]
        if not math.isfinite(x) or all(y != y for y in row):
            return  # a nan/inf loss is a finding elsewhere; a plot cannot draw it
        xs = self._xs
        if xs and x < xs[-1]:
            return  # out of order (a clock step back): the series stays sorted
        self._offered += 1
        if xs and self._offered < self.stride:
            self._fill(row)
            return
        self._offered = 0
        xs.append(x)
        for col, y in zip(self._cols, row, strict=True):
            col.append(y)
        if len(xs) > self.capacity:
            # Keep the first point and every second one after it: the span is kept whole.
            self._xs = xs[::2]
            self._cols = [_halved(col) for col in self._cols]
            self.stride *= 2

    def _fill(self, row: list[float]) -> None:
        """A row not kept: the last kept one stands for it, and takes its readings where it
        has none (a reading that comes every other sample must not vanish with the stride)."""
        for col, y in zip(self._cols, row, strict=True):
            if y == y and col[-1] != col[-1]:
                col[-1] = y

    def points(self, column: int = 0) -> list[Point]:
        """A column's points; its gaps left out."""
        return [(x, y) for x, y in zip(self._xs, self._cols[column], strict=True) if y == y]

    def span(self, column: int = 0) -> tuple[float, float] | None:
        """The first and last x where the column has a reading."""
        xs, ys = self._xs, self._cols[column]
        first = next((i for i in range(len(ys)) if ys[i] == ys[i]), None)  # NaN != NaN
        if first is None:
            return None
        last = next(i for i in range(len(ys) - 1, first - 1, -1) if ys[i] == ys[i])
        return xs[first], xs[last]

    def column(self, column: int) -> Column:
        return Column(self, column)

    def __len__(self) -> int:
        return len(self._xs)


@dataclass(frozen=True)
class Column:
    """One column of a ``Thinned`` table, read as a series of its own."""

    table: Thinned
    index: int

    def points(self) -> list[Point]:
        return self.table.points(self.index)

    def span(self) -> tuple[float, float] | None:
        return self.table.span(self.index)


class Series(Protocol):
    """What a plot reads: a ``Thinned`` of one column, or a ``Column`` of a wider one."""

    def points(self) -> list[Point]: ...

    def span(self) -> tuple[float, float] | None: ...


def _halved(col: array[float]) -> array[float]:
    """Every second reading, the first kept; a gap kept takes the reading after it (the row
    dropped, which the kept one stands for from now on), as ``Thinned._fill`` does."""
    kept = col[::2]
    for i, y in enumerate(kept):
        if y != y and 2 * i + 1 < len(col):
            kept[i] = col[2 * i + 1]
    return kept


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


class GpuHistory:
    """One GPU's readings over time: utilisation %, memory used %, power in W, sampled
    together (one table of three columns, its readings as 4-byte floats)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.table = Thinned(capacity, width=3, typecode="f")

    def add(self, t: float, util: float | None, mem: float | None, power: float | None) -> None:
        self.table.add_row(t, (util, mem, power))

    @property
    def util(self) -> Column:
        return self.table.column(0)

    @property
    def mem(self) -> Column:
        return self.table.column(1)

    @property
    def power(self) -> Column:
        return self.table.column(2)


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
                h = self.gpus[g.index] = GpuHistory(self.capacity)
            mem = None
            if g.mem_used_mib is not None and g.mem_total_mib:
                mem = 100.0 * g.mem_used_mib / g.mem_total_mib
            h.add(snap.time, None if g.util is None else float(g.util), mem, g.power_w)
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

    def series(self) -> Iterable[Series]:
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
