"""Parsing probe lines is tolerant: bad rows are skipped and reported, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.core.base.snapshot import Snapshot

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["gpus", "gpu_procs", "procs", "logs", "run", "telemetry", "time", "errors", "steps"]
)


@given(st.dictionaries(KEYS, JSON, max_size=8))
def test_any_shape_parses_or_is_reported(data: dict[str, object]) -> None:
    snap = Snapshot.from_json(json.dumps(data))
    assert isinstance(snap.errors, tuple)
    for g in snap.gpus:
        assert isinstance(g.index, int) and g.index >= 0
    if snap.steps is not None:  # a StepPoints only with a path and a start; points typed
        assert isinstance(snap.steps.path, str) and isinstance(snap.steps.start, int)
        assert all(isinstance(p[0], float) for p in snap.steps.points)


def test_rows_keep_good_values_and_report_bad_ones() -> None:
    snap = Snapshot.from_dict(
        {
            "time": 5,
            "gpus": [{"index": 0, "util": "high", "mem_used_mib": 12}, {"index": -1}, 7],
            "procs": [{"pid": 9, "ppid": 1, "state": "S", "nspid": [9, "x", 3]}, {"pid": "a"}],
            "logs": [{"path": "/a", "exists": True, "lines": ["x", 3, "y"]}],
            "run": {"id": "r", "dir": "/d", "pgid": 4, "exit_code": "nan"},
        }
    )
    (g,) = snap.gpus
    assert g.util is None and g.mem_used_mib == 12
    (p,) = snap.procs
    assert (p.pgid, p.sid, p.nspid, p.container_pid) == (9, 9, (9, 3), 3)
    assert snap.logs[0].lines == ("x", "y")
    assert snap.run is not None and snap.run.pgid == 4 and snap.run.exit_code is None
    assert len(snap.errors) == 3  # gpu -1, gpu 7, proc "a"


@pytest.mark.parametrize("line", ["", "nope", "[1, 2]", b"\xff\xfe"])
def test_not_an_object(line: str | bytes) -> None:
    with pytest.raises(ValueError):
        Snapshot.from_json(line)


def test_steps_keep_typed_points_and_drop_bad_ones() -> None:
    pts = [[1, 2, 3, 4], [True, 1, 1, 1], ["x", 1, 1, 1], [1, 2], 5, [2.5, "s", None, "fast"]]
    snap = Snapshot.from_dict({"time": 1, "steps": {"path": "/e", "from": 3.0, "points": pts}})
    assert snap.steps is not None and (snap.steps.path, snap.steps.start) == ("/e", 3)
    assert snap.steps.points == ((1.0, 2, 3.0, 4.0), (2.5, None, None, None))
    for bad in ({"from": 0}, {"path": "/e"}, {"path": 5, "from": 0}, {"path": "/e", "from": True}):
        assert Snapshot.from_dict({"time": 1, "steps": bad}).steps is None
