"""The probe's process table as change lists (``--delta``): what the reader rebuilds is the
whole table the probe would have sent, and a change list it cannot apply is said, never
guessed."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.snapshot_delta import ROWS_CAP, DeltaError, ProcTables
from dflash_tui.core.link.feed import Disconnected, Feed, Malformed
from dflash_tui.core.link.transport import LocalTransport
from dflash_tui.core.probe import main as probe_main
from dflash_tui.core.probe.procs import RowDelta

WAIT_S = 60  # a bound for what takes well under a second on an idle machine


def row(pid: int, cpu: float | None = 0.0, cmd: str = "job") -> dict[str, Any]:
    return {"pid": pid, "ppid": 1, "pgid": pid, "sid": pid, "state": "S", "start_ticks": pid,
            "rss_kb": 100, "cpu_pct": cpu, "user": "u", "cmd": cmd, "nspid": [pid]}  # fmt: skip


# Tables in turn: a row changes, one appears (at the front and in the middle), one leaves,
# the order moves, a row becomes a new object that encodes the same, the table empties.
SCRIPT: list[list[dict[str, Any]]] = [
    [row(1), row(2), row(3)],
    [row(1), row(2, 5.0), row(3)],
    [row(0), row(1), row(2, 5.0), row(4), row(3)],
    [row(0), row(2, 7.5), row(3)],
    [row(3), row(2, 7.5), row(0, cmd="other")],
    [row(3), row(2, 7.5), row(0, cmd="other")],
    [],
    [row(9)],
]


def line(enc: RowDelta, rows: list[dict[str, Any]]) -> str:
    return '{"time": 1.0, "host": "h", ' + enc.encode(rows) + "}"


def test_change_lists_rebuild_every_table_in_order() -> None:
    enc, tables = RowDelta(delta=True), ProcTables()
    enc.full_every = 4  # lines 1 and 5 whole
    for i, rows in enumerate(SCRIPT * 2):
        doc = json.loads(line(enc, rows))
        assert ("procs" in doc) == (i % 4 == 0), i  # the rest are change lists
        if "procs_delta" in doc:
            assert doc["procs_delta"]["base"] == doc["seq"] - 1
            unchanged = [r for r in rows if r in SCRIPT[(i - 1) % len(SCRIPT)]]
            assert len(doc["procs_delta"]["rows"]) == len(rows) - len(unchanged)
        assert tables.apply(doc)["procs"] == rows, i
        assert "procs_delta" not in doc


def test_a_stream_of_change_lists_gives_the_snapshots_of_whole_tables() -> None:
    """The real probe, over this machine's /proc while processes start and end: each line
    with --delta parses to the Snapshot its whole table gives."""
    probe = probe_main.Probe(probe_main.parse_args(["--interval=1", "--no-nvml", "--delta"]))
    probe.rows.full_every = 5
    whole, tables, kids, deltas = RowDelta(), ProcTables(), [], 0
    try:
        for i in range(12):
            if i % 3 == 1:
                kids.append(subprocess.Popen(["sleep", "60"]))
            if i % 4 == 3:
                kids.pop(0).kill()
            out = probe.sample()
            plain = probe.dumps(dict(out)).replace('"procs_delta"', '"_"')  # whole or not
            given = json.dumps({k: v for k, v in out.items() if k != "procs"}, default=str)
            full = given[:-1] + ", " + whole.encode(out["procs"]) + "}"
            deltas += '"_"' in plain
            got = Snapshot.from_json(plain.replace('"_"', '"procs_delta"'), tables)
            assert got == Snapshot.from_json(full), i
            assert [p.pid for p in got.procs] == [r["pid"] for r in out["procs"]]
        assert deltas == 12 - 3  # lines 1, 6 and 11 carried the whole table
    finally:
        probe.close()
        for k in kids:
            k.kill()
            k.wait()


def test_a_change_list_without_its_base_is_refused_until_a_whole_table() -> None:
    enc = RowDelta(delta=True)
    lines = [line(enc, rows) for rows in SCRIPT[:4]]
    with pytest.raises(ValueError, match="outside a stream"):
        Snapshot.from_json(lines[1])  # no stream: no base
    with pytest.raises(DeltaError, match="without its base"):
        Snapshot.from_json(lines[1], ProcTables())  # a reader that started mid-stream
    tables = ProcTables()
    Snapshot.from_json(lines[0], tables)
    with pytest.raises(DeltaError, match="without its base"):
        Snapshot.from_json(lines[2], tables)  # line 2 was lost
    with pytest.raises(DeltaError):
        Snapshot.from_json(lines[3], tables)  # the base went with it: nothing made up
    enc.full_every = 1
    snap = Snapshot.from_json(line(enc, SCRIPT[4]), tables)  # the next whole table repairs it
    assert [p.pid for p in snap.procs] == [3, 2, 0]
    enc.full_every = 60
    snap = Snapshot.from_json(line(enc, SCRIPT[5]), tables)
    assert [p.cmd for p in snap.procs] == ["job", "job", "other"]


def _with_base() -> ProcTables:
    tables = ProcTables()
    tables.apply({"seq": 1, "procs": [row(1), row(2)]})
    return tables


@pytest.mark.parametrize(
    "delta",
    [
        "not a dict",
        {"base": 1, "pids": "1,2", "rows": []},
        {"base": 1, "pids": [1, 2], "rows": {"pid": 1}},
        {"base": True, "pids": [1, 2], "rows": []},  # True == 1: a bool is no line number
        {"base": 1, "pids": [True, 2], "rows": []},  # nor a PID
        {"base": 1, "pids": [1.0, 2], "rows": []},
        {"base": 1, "pids": ["1"], "rows": []},
        {"base": 1, "pids": [1, 1], "rows": []},
        {"base": 1, "pids": [1, 3], "rows": []},  # PID 3 has no row
        {"base": 1, "pids": [1], "rows": [{"ppid": 1}]},
        {"base": 1, "pids": [1], "rows": [[1]]},
        {"base": 1, "pids": [1], "rows": [row(1), row(1)]},  # more rows than PIDs
        {"base": 0, "pids": [1, 2], "rows": []},
    ],
)
def test_a_malformed_change_list_is_refused(delta: Any) -> None:
    tables = _with_base()
    with pytest.raises(DeltaError):
        tables.apply({"seq": 2, "procs_delta": delta})
    assert tables.seq is None and not tables.rows


def test_a_well_formed_change_list_still_applies() -> None:
    """The hostile cases above differ from this one only where they say."""
    doc = _with_base().apply({"seq": 2, "procs_delta": {"base": 1, "pids": [2, 1], "rows": []}})
    assert doc["procs"] == [row(2), row(1)]


def test_a_change_list_without_seq_is_refused() -> None:
    with pytest.raises(DeltaError):
        _with_base().apply({"procs_delta": {"base": 1, "pids": [1], "rows": []}})


async def stray_probe_events(tmp_path: Path, lines: list[str], count: int) -> list[object]:
    """The first ``count`` events of a feed whose probe (each time it is started) records its
    arguments in ``tmp_path/args``, prints ``lines`` and waits."""
    stray = tmp_path / "probe.sh"
    printed = " ".join(shlex.quote(x) for x in lines)
    stray.write_text(
        "cat >/dev/null\n"
        f'echo "$*" >> {shlex.quote(str(tmp_path / "args"))}\n'
        f"printf '%s\\n' {printed}\n"
        "exec sleep 60\n"
    )
    feed = Feed(LocalTransport(python=f"sh {shlex.quote(str(stray))}"), HostConfig(), 0.1)
    events = feed.events()
    try:
        return [await asyncio.wait_for(anext(events), WAIT_S) for _ in range(count)]
    finally:
        await events.aclose()


async def test_the_feed_says_a_lost_base_and_starts_the_probe_again(tmp_path: Path) -> None:
    """A stream whose second line is a change list of a line the feed never got: a Malformed
    that says so, then the probe is started again at once (its first line a whole table), with
    no Disconnected between: the link never went down, and nothing may say it did (alerts,
    --watch and wait read a Disconnected as the host unreachable)."""
    enc = RowDelta(delta=True)
    whole, _lost = line(enc, SCRIPT[0]), line(enc, SCRIPT[1])
    got = await stray_probe_events(tmp_path, [whole, line(enc, SCRIPT[2])], 4)
    assert isinstance(got[0], Snapshot) and [p.pid for p in got[0].procs] == [1, 2, 3]
    assert isinstance(got[1], Malformed) and "without its base" in got[1].error
    assert isinstance(got[2], Snapshot) and [p.pid for p in got[2].procs] == [1, 2, 3]
    assert isinstance(got[3], Malformed)  # the same probe again: its change list is stray too
    assert not any(isinstance(e, Disconnected) for e in got)


async def test_a_probe_whose_whole_tables_never_arrive_goes_on_without_change_lists(
    tmp_path: Path,
) -> None:
    """Every whole table lost (over the line cap, say) and only change lists read: the probe is
    started again without --delta, not with it at every line for ever."""
    enc = RowDelta(delta=True)
    line(enc, SCRIPT[0])
    got = await stray_probe_events(tmp_path, [line(enc, SCRIPT[1])], 3)
    assert all(isinstance(e, Malformed) for e in got)
    starts = (tmp_path / "args").read_text().splitlines()
    assert len(starts) == 3
    assert ["--delta" in s for s in starts] == [True, False, False]


def test_a_table_over_the_row_cap_is_still_a_base() -> None:
    """A host of more processes than a sample keeps: the next change list applies (the sample
    cuts the rows, with a note), rather than a lost base and a restart at every other line."""
    tables = ProcTables()
    many = [row(p) for p in range(1, ROWS_CAP + 2)]
    tables.apply({"seq": 1, "procs": many})
    pids = [r["pid"] for r in many]
    doc = tables.apply({"seq": 2, "procs_delta": {"base": 1, "pids": pids, "rows": [row(7)]}})
    assert len(doc["procs"]) == ROWS_CAP + 1 and tables.seq == 2
