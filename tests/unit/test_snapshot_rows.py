"""Process rows kept between two samples of one source (tui/core/base/snapshot_rows.py): a row
as it was is the record parsed last time, a kept row is always what parsing gives, bools
(which ``==`` equates with 0 and 1) included, and each source keeps its own rows, whatever
its host calls itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.base.snapshot_delta import ProcTables
from dflash_tui.core.base.snapshot_rows import RowMemo

SOURCES: dict[str, ProcTables] = {}


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    SOURCES.clear()


def sample(source: str, *rows: dict[str, Any], host: str = "h") -> Snapshot:
    """A sample of ``source``'s stream (its own tables), through JSON text, as the probe's line
    arrives: new dicts every time."""
    line = json.dumps({"time": 1.0, "host": host, "procs": list(rows)})
    return Snapshot.from_json(line, SOURCES.setdefault(source, ProcTables()))


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
        SOURCES.clear()
        sample("h", first)
        assert sample("h", then).procs == (Proc.from_dict(then),)


def test_sources_keep_their_own_rows_whatever_their_host_is_called() -> None:
    """Two streams whose hosts give one name (one machine standing for several, containers of
    one image) each take their own last rows: never the other's, never parsed again."""
    a = sample("a", ROW, host="same")
    b = sample("b", {**ROW, "cpu_pct": 3.0}, host="same")
    assert b.procs[0] is not a.procs[0] and b.procs[0].cpu_pct == 3.0
    assert sample("a", ROW, host="same").procs[0] is a.procs[0]
    assert sample("b", {**ROW, "cpu_pct": 3.0}, host="same").procs[0] is b.procs[0]


def test_without_a_source_every_row_is_parsed() -> None:
    line = json.dumps({"time": 1.0, "host": "h", "procs": [ROW]})
    a, b = Snapshot.from_json(line), Snapshot.from_json(line)
    assert a.procs == b.procs and a.procs[0] is not b.procs[0]


def test_only_the_latest_sample_is_kept() -> None:
    sample("h", ROW)
    sample("h", {**ROW, "pid": 9})  # PID 7 has gone
    assert set(SOURCES["h"].memo.kept) == {9}
    memo = RowMemo()
    Snapshot.from_dict({"procs": [ROW, {**ROW, "pid": 8}]}, memo)
    Snapshot.from_dict({"procs": [{**ROW, "pid": 8}]}, memo)
    assert set(memo.kept) == {8}


def test_after_a_whole_table_unchanged_rows_are_taken_by_identity_again() -> None:
    """A stream with change lists sends the whole table now and then (every row a new dict,
    equal to the one kept): the record stays, and from then on the table's dict is the one
    kept, so the next change list's unchanged row is known by identity, not compared."""
    tables = ProcTables()
    other = {**ROW, "pid": 8}

    def line(seq: int, procs: Any = None, delta: Any = None) -> str:
        doc: dict[str, Any] = {"time": float(seq), "host": "h", "seq": seq}
        doc |= {"procs": procs} if procs is not None else {"procs_delta": delta}
        return json.dumps(doc)

    first = Snapshot.from_json(line(1, [ROW, other]), tables)
    again = Snapshot.from_json(line(2, [ROW, other]), tables)  # a whole table: new dicts
    assert again.procs[0] is first.procs[0]
    assert all(tables.memo.kept[p][0] is tables.rows[p] for p in (7, 8))
    changed = {**other, "cpu_pct": 50.0}
    third = Snapshot.from_json(
        line(3, delta={"base": 2, "pids": [7, 8], "rows": [changed]}), tables
    )
    assert third.procs[0] is first.procs[0] and third.procs[1].cpu_pct == 50.0
    assert tables.memo.kept[7][0] is tables.rows[7]
