"""Process rows kept between two samples of one source (tui/core/base/snapshot_rows.py): a row
as it was is the record parsed last time, a kept row is always what parsing gives, bools
(which ``==`` equates with 0 and 1) included, and each source keeps its own rows, whatever
its host calls itself."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dflash_tui.core.base.fields import as_float, as_int, finite
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import (
    ROWS_MAX,
    Proc,
    Snapshot,
)
from dflash_tui.core.base.snapshot_delta import DeltaError, ProcTables
from dflash_tui.core.base.snapshot_rows import KeptRows, RowMemo
from dflash_tui.core.probe.procs import RowDelta

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
        # the run's group: 50 (no leader), a group led by one of the table's, one of none
        doc["run"] = {"id": "r", "dir": "/r", "pgid": (50, 50, 105, 4242)[seq // 100 % 4]}
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


# --- A long stream of change lists, held to the slow path -----------------------------------


class SlowTables:
    """The process table a stream's line stands for, rebuilt the plain way: every line's whole
    table made again from the base dict, every PID looked up."""

    def __init__(self) -> None:
        self.seq: int | None = None
        self.rows: dict[Any, dict[str, Any]] = {}

    def apply(self, d: dict[str, Any]) -> dict[str, Any]:
        seq, delta = d.get("seq"), d.pop("procs_delta", None)
        if delta is None:
            procs = d.get("procs")
            if type(seq) is not int or not isinstance(procs, list):
                self.seq, self.rows = None, {}
            else:
                self.seq = seq
                self.rows = {r["pid"]: r for r in procs
                             if isinstance(r, dict) and type(r.get("pid")) is int}  # fmt: skip
            return d
        try:
            d["procs"] = self._rebuild(seq, delta)
        except DeltaError:
            self.seq, self.rows = None, {}
            raise
        return d

    def _rebuild(self, seq: Any, delta: Any) -> list[dict[str, Any]]:
        if not isinstance(delta, dict) or type(seq) is not int:
            raise DeltaError("malformed")
        base, pids, changed = delta.get("base"), delta.get("pids"), delta.get("rows")
        if self.seq is None or base != self.seq or type(base) is not int:
            raise DeltaError("no base")
        if not isinstance(pids, list) or not isinstance(changed, list):
            raise DeltaError("malformed")
        if len(changed) > len(pids) or any(type(p) is not int for p in pids):
            raise DeltaError("malformed")
        table = dict(self.rows)
        for r in changed:
            if not isinstance(r, dict) or type(r.get("pid")) is not int:
                raise DeltaError("malformed row")
            table[r["pid"]] = r
        if any(p not in table for p in pids) or len(set(pids)) != len(pids):
            raise DeltaError("unknown or twice")
        self.seq, self.rows = seq, {p: table[p] for p in pids}
        return list(self.rows.values())


def _proc_row(pid: Any, k: int) -> dict[str, Any]:
    return {"pid": pid, "ppid": 1, "pgid": 50 if pid % 7 == 0 else pid, "sid": pid, "state": "S",
            "start_ticks": pid, "rss_kb": 1000 + k, "cpu_pct": 0.0, "user": "u",
            "cmd": f"job {pid}", "nspid": [pid, 1]}  # fmt: skip


def _hostile(rng: random.Random, row: dict[str, Any]) -> dict[str, Any]:
    """The row made wrong in one of the ways a probe line may be."""
    pick = rng.randrange(9)
    if pick == 0:
        return {k: v for k, v in row.items() if k != "ppid"}  # malformed: skipped, said
    if pick == 1:
        return {**row, "rss_kb": True}  # a bool where a number belongs
    if pick == 2:
        return {**row, "pgid": False}  # == 0: its own group, parsed
    if pick == 3:
        return {**row, "nspid": [row["pid"], True]}
    if pick == 4:
        return {**row, "cpu_pct": float("nan") if rng.random() < 0.5 else 1e400}
    if pick == 5:
        return {**row, "state": 3, "user": None, "cmd": ["x"]}
    if pick == 6:
        return {**row, "extra": {"deep": [1]}}
    if pick == 7:
        return {**row, "rss_kb": 1 << 70}
    return {**row, "cpu_pct": 1}  # an int where a float is expected: the same float


def _tables(seed: int, n: int) -> Iterator[list[dict[str, Any]]]:
    """``n`` tables of one machine in turn: a few rows change each time, processes come and
    go (at either end and in the middle), a PID is reused in another's place, rows swap, a
    PID is there twice for a while, and rows turn hostile for a while."""
    rng = random.Random(seed)
    rows = [_proc_row(100 + k, 0) for k in range(40)]
    fresh, hostile, seen = 1000, set(), set()
    for i in range(n):
        rows = list(rows)
        for _ in range(rng.randrange(4)):  # rows that move
            k = rng.randrange(len(rows))
            rows[k] = {**rows[k], "rss_kb": _proc_row(0, i)["rss_kb"] + rng.randrange(9)}
        event = rng.randrange(30)
        if event == 0 and len(rows) > 5:
            del rows[rng.randrange(len(rows))]
        elif event == 1:
            rows.insert(rng.randrange(len(rows) + 1), _proc_row(fresh, i))
            fresh += 1
        elif event == 2:  # a process ends, another takes its place in the table
            rows[rng.randrange(len(rows))] = _proc_row(fresh, i)
            fresh += 1
        elif event == 3:
            a, b = rng.sample(range(len(rows)), 2)
            rows[a], rows[b] = rows[b], rows[a]
        elif event == 10:  # a process joins the run's group 50, or leaves it
            k = rng.randrange(len(rows))
            pgid = 50 if rows[k].get("pgid") != 50 else rows[k]["pid"]
            rows[k] = {**rows[k], "pgid": pgid}
        elif event == 4:
            k = rng.randrange(len(rows))
            rows[k] = _hostile(rng, rows[k])
            hostile.add(rows[k]["pid"])
        elif event in (5, 6, 8, 9):  # well formed again
            rows = [_proc_row(r["pid"], i) if r["pid"] in hostile else r for r in rows]
            hostile.clear()
        if i % 60 == 0 and event % 2:  # a PID twice, in a whole table (a change list naming
            rows.append(dict(rows[rng.randrange(len(rows))]))  # one twice is refused)
        elif i % 60 == 1:
            seen = set()
            rows = [r for r in rows if not (r["pid"] in seen or seen.add(r["pid"]))]
        yield rows


def _lines(seed: int, n: int) -> Iterator[tuple[str, bool]]:
    """The probe's lines for ``_tables``: a whole table every 60 lines, else the rows whose
    text changed and every PID; (line, delivered): now and then a line is lost on the way,
    or a change list is made malformed."""
    rng = random.Random(seed + 1)
    sent: dict[Any, str] = {}
    for seq, rows in enumerate(_tables(seed, n), start=1):
        texts = {r["pid"]: json.dumps(r) for r in rows}
        doc: dict[str, Any] = {"time": float(seq), "host": "h", "seq": seq}
        # the run's group: 50 (no leader), a group led by one of the table's, one of none
        doc["run"] = {"id": "r", "dir": "/r", "pgid": (50, 50, 105, 4242)[seq // 100 % 4]}
        if seq % 60 == 1:
            doc["procs"] = rows
        else:
            changed = [r for r in rows if sent.get(r["pid"]) != texts[r["pid"]]]
            delta = {"base": seq - 1, "pids": [r["pid"] for r in rows], "rows": changed}
            bad = rng.randrange(600)
            if bad == 0:
                delta["pids"] = [*delta["pids"][:-1], True] if rows else [True]
            elif bad == 1:
                delta["rows"] = [*changed, ["not a row"]]
            elif bad == 2:
                delta["pids"] = [*delta["pids"], 99_999]  # a PID it has no row for
            elif bad == 3 and len(changed) < len(rows):  # a row for a PID not in the table
                delta["rows"] = [*changed, _proc_row(77_777, seq)]
            doc["procs_delta"] = delta
        sent = texts
        yield json.dumps(doc), rng.randrange(400) != 0


def _same(got: Snapshot, want: Snapshot) -> None:
    assert got == want
    # every record as __init__ makes it: the same fields, in the same order
    for a, b in zip(got.procs, want.procs, strict=True):
        assert list(vars(a).items()) == list(vars(b).items())
        assert list(vars(replace(a)).items()) == list(vars(a).items())
    assert got._by_pid == {p.pid: p for p in want.procs}
    for group in {p.pgid for p in want.procs} | {50, 105, 4242}:
        assert got.members(group) == tuple(p for p in want.procs if group in (p.pgid, p.sid))
        assert got.group_of(group) == (
            tuple(p for p in want.procs if p.pgid == group),
            next((p for p in want.procs if p.pid == group), None),
        )
    run = got.run
    if run is not None and run.pgid is not None:
        assert group_members(run, got.procs, got.group_of(run.pgid)) == group_members(
            run, want.procs
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("cap", [None, 42])
def test_a_long_stream_parses_as_every_row_parsed_afresh(
    seed: int, cap: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a long scripted stream (rows changing, PIDs coming and going, whole tables every
    60 lines, malformed and hostile rows, lost lines, broken change lists), every sample is
    what its whole table gives parsed afresh without a memo, and a change list is refused
    exactly where the plain rebuild refuses it."""
    if cap is not None:  # tables around the row cap: cut and not cut
        monkeypatch.setitem(ROWS_MAX, "procs", cap)
    tables, slow = ProcTables(), SlowTables()
    refused, shortcuts, table, made = 0, [], KeptRows.table, 0

    def counted(kept: KeptRows, given: list[Any]) -> Any:
        found = table(kept, given)
        shortcuts.append(found is not None)
        return found

    monkeypatch.setattr(KeptRows, "table", counted)
    for text, delivered in _lines(seed, 900):
        if not delivered:
            continue
        try:
            want_doc = slow.apply(json.loads(text))
        except DeltaError:
            with pytest.raises(DeltaError):
                Snapshot.from_json(text, tables)
            refused += 1
            continue
        got = Snapshot.from_json(text, tables)
        want = Snapshot.from_dict(json.loads(json.dumps(want_doc)))  # new dicts, no memo
        _same(got, want)
        made += "_group" in got.__dict__
        # only this sample's rows are kept: none of a process gone
        assert set(tables.memo.kept) <= {r.get("pid") for r in want_doc["procs"]}
    assert refused > 10 and sum(shortcuts) > 300 and made > 300, (refused, sum(shortcuts), made)


def test_the_shortcut_holds_a_stream_whose_rows_turn_hostile_and_back() -> None:
    """A steady stream's table while one row's value turns to a bool, to a malformed row and
    back: the same records as parsed afresh at every line, the errors said each time."""
    tables = ProcTables()
    rows = [_proc_row(100 + k, 0) for k in range(20)]
    turns = [{}, {"rss_kb": True}, {}, {"ppid": None}, {"ppid": "1"}, {}, {"nspid": [1, True]}, {}]
    enc = RowDelta(delta=True)
    for i in range(60):
        rows = list(rows)
        rows[3] = {**_proc_row(103, 0), **turns[i % len(turns)]}
        rows[i % 20] = {**rows[i % 20], "cpu_pct": float(i)}
        text = '{"time": 1.0, "host": "h", ' + enc.encode(rows) + "}"
        got = Snapshot.from_json(text, tables)
        want = Snapshot.from_dict({"time": 1.0, "host": "h", "procs": rows})
        _same(got, want)
        malformed = turns[i % len(turns)].get("ppid", 1) in (None, "1")
        assert len(got.errors) == malformed


class _Int(int):
    pass


VALUES: list[Any] = [
    0, 1, -5, 1 << 70, -(1 << 70), 1 << 1100, True, False, 0.0, -0.0, 2.5, -1e308, 1e308,
    float("nan"), float("inf"), float("-inf"), 5e-324, "3", None, [1], {"a": 1}, _Int(4),
]  # fmt: skip


def test_the_converters_short_cuts_say_what_their_checks_say() -> None:
    """An int or a float taken at once is what the full checks make of it: a bool is no
    number, NaN and the infinities unknown, an int too large for a float unknown as one."""

    def slow_int(v: Any) -> int | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            return v
        if isinstance(v, float) and finite(v):
            return int(v)
        return None

    def slow_float(v: Any) -> float | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            try:
                return float(v)
            except OverflowError:
                return None
        return v if isinstance(v, float) and finite(v) else None

    for v in VALUES:
        for got, want in ((as_int(v), slow_int(v)), (as_float(v), slow_float(v))):
            assert type(got) is type(want) and (got == want or got is want), v


def _gpu(g: int) -> dict[str, Any]:
    return {"index": g, "uuid": f"GPU-{g}", "name": "H200", "util": 0, "mem_used_mib": 600,
            "mem_total_mib": 143_771, "temp_c": 35, "power_w": 80.0, "pstate": "P0"}  # fmt: skip


GPU_TURNS: list[dict[str, Any]] = [
    {"util": 95, "power_w": 300.5}, {"util": True}, {"util": 1}, {"util": 1e23},
    {"mem_used_mib": 200_000}, {"power_w": 300}, {"power_w": float("nan")}, {"index": -1},
    {"index": None}, {"temp_c": False}, {"temp_c": 0}, {"pstate": 0}, {"util": -0.0},
    {"throttle_reasons": 1 << 70}, {"extra": {"a": [True]}}, {"uuid": ["GPU-0"]},
]  # fmt: skip


@pytest.mark.parametrize("seed", [4, 5])
def test_gpu_rows_taken_again_are_what_parsing_says_notes_and_all(seed: int) -> None:
    """GPUs and GPU processes that stand still are last sample's records and range notes
    again: held over a scripted stream (readings that move, stand, turn out of range, turn
    to bools, rows that go malformed, come and go) to every row parsed and checked afresh."""
    rng = random.Random(seed)
    gpus, gprocs = (
        [_gpu(g) for g in range(8)],
        [{"pid": 500 + g, "gpu_uuid": f"GPU-{g}", "used_mib": 59_000} for g in range(8)],
    )
    tables, taken = ProcTables(), 0
    for i in range(400):
        gpus, gprocs = list(gpus), list(gprocs)
        for _ in range(rng.randrange(3)):
            g = rng.randrange(len(gpus))
            gpus[g] = {**_gpu(g), **rng.choice(GPU_TURNS)}
        if rng.random() < 0.2:
            g = rng.randrange(8)
            gpus[g] = _gpu(g)
        pick = rng.randrange(10)
        if pick == 0 and gprocs:
            del gprocs[rng.randrange(len(gprocs))]
        elif pick == 1:
            gprocs.insert(0, {"pid": 900 + i, "gpu_uuid": "GPU-1", "used_mib": rng.choice(
                [10, -5, True, 1 << 30, 2.5])})  # fmt: skip
        elif pick == 2:
            gprocs.append(rng.choice([["not", "a", "row"], {"pid": "7"}, {"gpu_uuid": "x"}]))
        doc = {"time": float(i), "host": "h", "seq": i + 1, "procs": [], "gpus": gpus,
               "gpu_procs": gprocs}  # fmt: skip
        text = json.dumps(doc)
        before = {k: list(v) for k, v in tables.memo.places.items()}
        got = Snapshot.from_json(text, tables)
        want = Snapshot.from_json(text)
        assert got == want and got.errors == want.errors, i
        for a, b in zip(got.gpus, want.gpus, strict=True):
            assert list(vars(a).items()) == list(vars(b).items())
        taken += sum(
            any(x is not None and x[2] is g for x in before.get("gpus", ())) for g in got.gpus
        )
    assert taken > 1000, taken
