"""The History tab's bounded history (tui/core/diagnosis/history.py): thinning keeps the whole
span in bounded memory; the view's zoom and pan stay within it."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

from dflash_tui.core.base.snapshot import Snapshot, StepPoints
from dflash_tui.core.diagnosis.history import ZOOMS, RunHistory, Thinned, View, decimate


def test_thinning_keeps_the_whole_span_in_bounded_memory() -> None:
    ser = Thinned(capacity=64)
    for i in range(100_000):
        ser.add(float(i), float(i % 7))
        assert len(ser) <= 64
    pts = ser.points()
    assert pts[0][0] == 0.0  # the start is never dropped
    assert pts[-1][0] >= 100_000 - ser.stride  # the newest is at most one stride old
    assert len(pts) >= 32  # halved, not emptied
    gaps = {b[0] - a[0] for a, b in itertools.pairwise(pts)}
    assert gaps == {float(ser.stride)}  # an even density over the whole span
    # The arrays themselves stay bounded: 8 bytes a coordinate, with some room to grow.
    assert sys.getsizeof(ser._xs) + sys.getsizeof(ser._cols[0]) < 2 * (64 * 8 * 2 + 128)


def test_a_gpus_readings_share_their_times_and_keep_their_own_gaps() -> None:
    h = RunHistory(capacity=16)

    def add(i: int) -> None:
        gpu = {"index": 0, "util": i % 100, "mem_used_mib": 1000, "mem_total_mib": 4000}
        # power is missing on every third sample (a card that does not say), util on none
        if i % 3:
            gpu["power_w"] = 250.5
        h.add(Snapshot.from_dict({"time": float(i), "gpus": [gpu]}))

    for i in range(12):
        add(i)
    g = h.gpus[0]
    assert [x for x, _ in g.power.points()] == [float(i) for i in range(12) if i % 3]  # gaps
    assert len(g.util.points()) == 12
    for i in range(12, 1000):
        add(i)
    util, power = g.util.points(), g.power.points()
    assert len(util) <= 16 and util[0] == (0.0, 0.0)  # halved together, the start kept
    assert [x for x, _ in g.mem.points()] == [x for x, _ in util]  # one time axis
    assert all(y == x % 100 for x, y in util)  # each point is that sample's reading
    assert len(power) == len(util) and all(y == 250.5 for _, y in power)
    assert g.power.span() == (power[0][0], power[-1][0])
    assert h.span() == (0.0, util[-1][0])
    # One array of times and three of 4-byte readings: 20 bytes a point, not 48.
    table = g.table
    held = sys.getsizeof(table._xs) + sum(sys.getsizeof(c) for c in table._cols)
    assert held < 2 * (16 * 20 + 4 * 64)
    assert all(c.itemsize == 4 for c in table._cols) and table._xs.itemsize == 8


def test_a_sample_without_readings_keeps_no_point() -> None:
    h = RunHistory(capacity=8)
    h.add(Snapshot.from_dict({"time": 1.0, "gpus": [{"index": 0}]}))
    assert len(h.gpus[0].table) == 0 and h.gpus[0].util.span() is None and h.span() is None


def test_unplottable_and_out_of_order_points_are_skipped() -> None:
    ser = Thinned(capacity=8)
    for x, y in ((1.0, 1.0), (2.0, float("nan")), (0.5, 3.0), (3.0, float("inf")), (4.0, 2.0)):
        ser.add(x, y)
    assert ser.points() == [(1.0, 1.0), (4.0, 2.0)]


def sample(t: float, steps: StepPoints | None = None) -> Snapshot:
    gpus = [
        {"index": i, "util": 50 + i, "mem_used_mib": 1000, "mem_total_mib": 4000, "power_w": 300.0}
        for i in range(2)
    ]
    return replace(Snapshot.from_dict({"time": t, "gpus": gpus}), steps=steps)


def test_run_history_folds_gpus_and_steps_and_restarts_on_a_new_stream() -> None:
    h = RunHistory(capacity=16)
    h.add(sample(10.0, StepPoints("/r/a/events.jsonl", 0, ((5.0, 1, 3.0, 2000.0),))))
    h.add(sample(11.0, StepPoints("/r/a/events.jsonl", 90, ((6.0, 2, 2.5, None),))))
    assert h.loss.points() == [(5.0, 3.0), (6.0, 2.5)] and h.tok_s.points() == [(5.0, 2000.0)]
    assert h.gpus[1].util.points() == [(10.0, 51.0), (11.0, 51.0)]
    assert h.gpus[0].mem.points()[0] == (10.0, 25.0) and h.gpus[0].power.points()[0][1] == 300.0
    assert h.span() == (5.0, 11.0)
    h.add(sample(12.0, StepPoints("/r/b/events.jsonl", 0, ((12.0, 1, 4.0, 1.0),))))
    assert h.loss.points() == [(12.0, 4.0)]  # another run: its own curve
    h.add(sample(13.0, StepPoints("/r/b/events.jsonl", 0, ((12.0, 1, 4.0, 1.0),))))
    assert h.loss.points() == [(12.0, 4.0)]  # read again from byte 0 (a new probe): no doubles


def test_view_zooms_and_pans_within_the_span() -> None:
    span = (0.0, 7200.0)
    v = View()
    assert v.bounds(span) == span and v.label() == "whole run"
    v = v.next_zoom()
    assert ZOOMS[v.zoom] == 3600.0 and v.bounds(span) == (3600.0, 7200.0)
    assert v.pan(-1, span).bounds(span) == (1800.0, 5400.0)
    far = v.pan(-100, span)
    assert far.bounds(span) == (0.0, 3600.0) and far.pan(1, span).bounds(span) == (1800.0, 5400.0)
    assert v.pan(5, span).bounds(span) == (3600.0, 7200.0)  # never past the newest
    v = v.next_zoom().next_zoom()
    assert v.zoom == 0 and v.bounds(span) == span
    assert View(2).bounds((0.0, 100.0)) == (0.0, 100.0)  # a window wider than the run


def test_decimate_bounds_the_points_and_keeps_a_short_dip() -> None:
    pts = [(float(i), 90.0) for i in range(10_000)]
    pts[4321] = (4321.0, 5.0)  # one sample of a power drop
    out = decimate(pts, 100)
    assert len(out) <= 100 and (4321.0, 5.0) in out
    assert out[0][0] == 0.0 and out == sorted(out)
    assert decimate(pts[:50], 100) == pts[:50]


def test_a_reading_that_comes_every_other_sample_keeps_its_points_when_thinned() -> None:
    """The columns are thinned together: a kept sample without a reading takes the one of
    the samples it stands for, so a column with regular gaps does not vanish with the
    stride (the kept points are at most a stride away from their reading's time)."""
    h = RunHistory(capacity=16)
    for i in range(1000):
        gpu = {"index": 0, "util": 50}
        if i % 2:
            gpu["power_w"] = float(i)
        h.add(Snapshot.from_dict({"time": float(i), "gpus": [gpu]}))
    g = h.gpus[0]
    power, util = g.power.points(), g.util.points()
    assert len(power) >= len(util) - 1 >= 8  # only the first sample has none in its span
    stride = g.table.stride
    assert all(0 < y - x < stride for x, y in power)  # a reading of a sample it stands for
    span = g.power.span()
    assert span is not None and span[1] >= 1000 - 2 * stride
