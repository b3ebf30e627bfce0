"""The process table of a probe stream whose lines carry change lists (the probe's ``--delta``,
tui/core/probe/procs.py ``RowDelta``): each line is rebuilt into the whole table it stands for,
before ``Snapshot.from_dict`` sees it, so every consumer gets whole Snapshots.

A line carries ``seq``; a whole table (``procs``) becomes the base; a change list
(``procs_delta``: ``base``, the line it is relative to, ``pids``, every PID in the table's
order, and ``rows``, the rows whose text changed) is applied only to exactly that base. Without
it (a line refused or lost, a reader that started mid-stream), or when the list is malformed,
nothing is made up: ``DeltaError`` (a ValueError: the feed's ``Malformed``) and the base is
dropped until the probe's next whole table.
"""

from __future__ import annotations

from typing import Any

from dflash_tui.core.base.snapshot_rows import RowMemo

# Process rows one sample may carry (snapshot.py ROWS_MAX: the rest are cut there, with a note).
# The base keeps a longer table whole, as the probe's next change list is relative to all of
# it: the line cap (PROBE_LINE_MAX) is what bounds a table's size here.
ROWS_CAP = 20_000


class DeltaError(ValueError):
    """A change list that cannot be applied: the sample's process table is unknown."""


def _int(v: Any) -> bool:
    return type(v) is int


class ProcTables:
    """One probe stream's last process table (its raw rows by PID), to apply change lists to,
    and the records parsed from those rows (``memo``: an unchanged row is the same dict, so
    its record is taken again by identity)."""

    def __init__(self) -> None:
        self.seq: int | None = None
        self.rows: dict[int, dict[str, Any]] = {}
        self.pids: list[int] = []  # the table's PIDs in order: ``rows``' keys
        self.memo = RowMemo()

    def apply(self, d: dict[str, Any]) -> dict[str, Any]:
        """``d`` with its whole ``procs`` list (a change list replaced by the table it makes).
        Raises DeltaError when the change list has no base here or is malformed."""
        seq, delta = d.get("seq"), d.pop("procs_delta", None)
        if delta is None:
            self._keep(seq if _int(seq) else None, d.get("procs"))
            return d
        try:
            d["procs"] = self._rebuild(seq, delta)
        except DeltaError:
            self.seq, self.rows, self.pids = None, {}, []
            raise
        return d

    def _keep(self, seq: int | None, procs: Any) -> None:
        if seq is None or not isinstance(procs, list):
            self.seq, self.rows, self.pids = None, {}, []  # no base: a change list is refused
            return
        self.seq = seq
        self.rows = {r["pid"]: r for r in procs if isinstance(r, dict) and _int(r.get("pid"))}
        self.pids = list(self.rows)

    def _rebuild(self, seq: Any, delta: Any) -> list[dict[str, Any]]:
        if not isinstance(delta, dict) or not _int(seq):
            raise DeltaError("probe line: a malformed process-table change list")
        base, pids, changed = delta.get("base"), delta.get("pids"), delta.get("rows")
        if self.seq is None or base != self.seq or not _int(base):
            raise DeltaError(
                "probe line: a process-table change list without its base (a line was lost):"
                " no process table until the probe's next whole one"
            )
        if not isinstance(pids, list) or not isinstance(changed, list):
            raise DeltaError("probe line: a malformed process-table change list")
        if len(changed) > len(pids):  # every PID must be in the base or sent: bounded by it
            raise DeltaError("probe line: a change list with more rows than PIDs")
        if not set(map(type, pids)) <= {int}:  # a bool is no PID
            raise DeltaError("probe line: a change list's PIDs are not all numbers")
        table = self.rows
        # The base's PIDs in the base's order (most lines: no process came or went), each
        # changed row one of them: the table is the base with those rows replaced in place.
        same = pids == self.pids
        for r in changed:
            if not isinstance(r, dict) or not _int(r.get("pid")):
                raise DeltaError(f"probe line: a malformed changed row: {str(r)[:80]!r}")
            pid = r["pid"]
            same = same and pid in table
            table[pid] = r
        if same:
            rows, pids = table, self.pids  # the base's PIDs: each a key of its own
        else:
            try:
                rows = {p: table[p] for p in pids}
            except KeyError:  # a PID neither kept nor sent
                raise DeltaError(
                    "probe line: a change list names a PID it has no row for"
                ) from None
            if len(rows) != len(pids):
                raise DeltaError("probe line: a change list names a PID twice")
        self.seq, self.rows, self.pids = seq, rows, pids
        return list(rows.values())
