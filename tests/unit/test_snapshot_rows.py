"""Process rows kept between two samples of a host (tui/core/base/snapshot_rows.py): a row as
it was is the record parsed last time, and a kept row is always what parsing gives, bools
(which ``==`` equates with 0 and 1) included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dflash_tui.core.base import snapshot_rows
from dflash_tui.core.base.snapshot import Proc, Snapshot


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    snapshot_rows._KEPT.clear()


def sample(host: str, *rows: dict[str, Any]) -> Snapshot:
    # Through JSON text, as the probe's line arrives: new dicts every time.
    return Snapshot.from_json(json.dumps({"time": 1.0, "host": host, "procs": list(rows)}))


ROW = {"pid": 7, "ppid": 1, "pgid": 7, "sid": 7, "state": "S", "rss_kb": 100, "cpu_pct": 0.0,
       "user": "u", "cmd": "sleep 9", "nspid": [7, 1]}  # fmt: skip


def test_an_unchanged_row_is_the_record_parsed_last_time() -> None:
    a, b = sample("h", ROW, {**ROW, "pid": 8}), sample("h", ROW, {**ROW, "pid": 8})
    assert a.procs[0] is b.procs[0] and a.procs[1] is b.procs[1]
    assert b.procs[0] == Proc.from_dict(ROW) and b.procs[0].nspid == (7, 1)


def test_a_changed_row_is_parsed_again() -> None:
    a = sample("h", ROW)
    b = sample("h", {**ROW, "cpu_pct": 12.5})
    assert b.procs[0] is not a.procs[0] and b.procs[0].cpu_pct == 12.5


@pytest.mark.parametrize(
    ("field", "number", "flag"),
    [("rss_kb", 1, True), ("pgid", 0, False), ("nspid", [7, 1], [7, True])],
)
def test_a_bool_is_never_taken_for_the_number_it_equals(field: str, number: Any, flag: Any) -> None:
    """``True == 1`` and ``[7, True] == [7, 1]``: parsed, the bool is no number."""
    with_number, with_flag = {**ROW, field: number}, {**ROW, field: flag}
    for first, then in ((with_number, with_flag), (with_flag, with_number)):
        snapshot_rows._KEPT.clear()
        sample("h", first)
        assert sample("h", then).procs == (Proc.from_dict(then),)


def test_hosts_keep_their_own_rows() -> None:
    a = sample("a", ROW)
    b = sample("b", ROW)
    assert b.procs[0] is not a.procs[0] and b.procs[0] == a.procs[0]
    assert sample("a", ROW).procs[0] is a.procs[0]


def test_only_the_latest_sample_is_kept_and_hosts_are_bounded() -> None:
    sample("h", ROW)
    sample("h", {**ROW, "pid": 9})  # PID 7 has gone
    assert set(snapshot_rows._KEPT["h"]) == {9}
    for i in range(snapshot_rows.MAX_HOSTS + 5):
        sample(f"h{i}", ROW)
    assert len(snapshot_rows._KEPT) <= snapshot_rows.MAX_HOSTS
