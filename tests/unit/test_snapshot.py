"""Parsing probe lines is tolerant: bad rows are skipped and reported, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.local_probe import one_sample

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["gpus", "gpu_procs", "procs", "logs", "run", "telemetry", "time", "errors", "steps",
     "machine", "workers", "supervisor", "last_step", "interval", "boot_time"]
)  # fmt: skip


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


@pytest.mark.parametrize("line", ["[" * 100_000, '{"gpus": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_nesting_deeper_than_the_parser_is_malformed_not_a_crash(line: str) -> None:
    with pytest.raises(ValueError, match="nested too deep"):
        Snapshot.from_json(line)


def _every_number(doc: object, to: object) -> object:
    """``doc`` with each number (not a bool) replaced by ``to``."""
    if isinstance(doc, dict):
        return {k: _every_number(v, to) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_every_number(v, to) for v in doc]
    if isinstance(doc, int | float) and not isinstance(doc, bool):
        return to
    return doc


def _full_sample(tmp_path: Path) -> dict[str, object]:
    """A sample of this machine by the real probe, with every optional part filled in."""
    doc = one_sample(["--once", f"--run-root={tmp_path}"])
    doc["gpus"] = [
        {
            "index": 0,
            "uuid": "GPU-0",
            "name": "H200",
            "util": 50,
            "temp_c": 60,
            "mem_used_mib": 1,
            "mem_total_mib": 2,
            "power_w": 1.5,
            "power_limit_w": 700,
        }
    ]
    doc["gpu_procs"] = [{"pid": 5, "gpu_uuid": "GPU-0", "used_mib": 3, "name": "python3"}]
    doc["supervisor"] = {
        "pid": 7,
        "started_at": 1.0,
        "heartbeat_at": 2.0,
        "heartbeat_s": 2,
        "start_ticks": 9,
        "restarts": 1,
        "stopped_at": 3.0,
    }
    doc["last_step"] = {"time": 1.0, "step": 3, "loss": 0.5, "acc": 0.1, "tok_s": 9.0}
    doc["steps"] = {"path": "/r/events.jsonl", "start": 0, "points": [[1.0, 1, 0.5, 9.0]]}
    doc["workers"] = [
        {
            "role": "target",
            "index": 0,
            "gpu": 0,
            "rank": 0,
            "step": 3,
            "queue": 1,
            "state": "step",
            "since": 1.0,
            "time": 2.0,
        }
    ]
    machine = doc["machine"]
    assert isinstance(machine, dict)
    machine["checkpoint"] = {"path": "/r/ckpt", "step": 3, "mtime": 1.0}
    machine["kernel_log"] = {
        "source": "kmsg",
        "xids": [{"time": 1.0, "code": 48, "pid": 5}],
        "ooms": [{"time": 1.0, "pid": 5}],
    }
    machine["nvml"] = {
        "gpus": [
            {
                "index": 0,
                "uuid": "GPU-0",
                "xids": [{"time": 1.0, "code": 79}],
                "remapped_rows": {"uncorrectable": 1},
                "pcie_replay": 2,
                "retired_pages": {"double_bit": 1},
            }
        ]
    }
    return doc  # fmt: skip


@pytest.mark.parametrize("to", [10**400, -(10**400), 2**63, -1, 1e308], ids=str)
def test_numbers_out_of_range_anywhere_are_unknown_not_a_crash(tmp_path: Path, to: object) -> None:
    # A huge integer (valid JSON) in a field read as a float raises OverflowError in float():
    # every part of the parse (the host's machine part, workers, the supervisor record) must
    # take it as unknown.
    doc = _every_number(_full_sample(tmp_path), to)
    snap = Snapshot.from_json(json.dumps(doc))
    assert isinstance(snap, Snapshot)
    if to == 10**400:
        assert snap.supervisor is not None and snap.supervisor.started_at is None
        assert snap.machine is not None and snap.machine.checkpoint is not None
        assert snap.machine.checkpoint.mtime is None
        assert all(w.since is None for w in snap.workers)
