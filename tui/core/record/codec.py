"""A Snapshot as a record line and back (pure).

A sample is recorded as the probe sent it, parsed (``Snapshot``'s fields by their probe names,
so ``Snapshot.from_dict`` reads it back), plus what the diagnosis said of it. The process
table is most of a sample and barely changes between two: after a segment's first sample it
is written as the rows that changed (``procs_set``) and the PIDs that left (``procs_gone``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from dflash_tui.core.base.fields import as_list
from dflash_tui.core.base.machine import GpuHealth, Machine
from dflash_tui.core.base.snapshot import Proc, Snapshot, StepPoints
from dflash_tui.core.base.snapshot_rows import RowMemo
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.views import Diagnosis

FORMAT = 1
_NESTED = ("telemetry", "run", "last_step")
_ROWS = ("gpus", "gpu_procs", "logs")


def _row(obj: Any) -> dict[str, Any]:
    return dict(vars(obj))  # frozen dataclasses without slots: their fields, nothing else


def _steps(steps: StepPoints | None) -> dict[str, Any] | None:
    """The probe's ``steps`` object (its key for the start is ``from``)."""
    if steps is None:
        return None
    points = [list(p) for p in steps.points]
    return {"path": steps.path, "from": steps.start, "thinned": steps.thinned, "points": points}


def _health(h: GpuHealth) -> dict[str, Any]:
    return {
        "index": h.index, "uuid": h.uuid, "lost": h.lost, "error": h.error,
        "xids": [{"time": t, "code": c} for t, c in h.xids],
        "remapped_rows": {"uncorrectable": h.remap_uncorrectable, "pending": h.remap_pending,
                          "failure": h.remap_failure},
        "retired_pages": {"double_bit": h.retired_double_bit}, "pcie_replay": h.pcie_replay,
    }  # fmt: skip


def _machine(m: Machine | None) -> dict[str, Any] | None:
    """The probe's ``machine`` object (``Machine.from_dict`` reads it back)."""
    if m is None:
        return None
    out = {k: getattr(m, k) for k in ("mem_total_kb", "mem_available_kb", "swap_total_kb",
                                      "swap_free_kb", "oom_kill")}  # fmt: skip
    out["disks"] = [_row(d) for d in m.disks]
    out["checkpoint"] = _row(m.checkpoint) if m.checkpoint is not None else None
    out["kernel_log"] = {
        "source": m.kernel_source, "error": m.kernel_error,
        "xids": [_row(x) for x in m.kernel_xids], "ooms": [_row(x) for x in m.kernel_ooms],
    }  # fmt: skip
    out["nvml"] = {"gpus": [_health(h) for h in m.gpu_health], "xid_watch": m.xid_watch}
    return out


_FIELDS = tuple(f.name for f in fields(Snapshot))  # in order: the record's keys' order


def snapshot_dict(snap: Snapshot) -> dict[str, Any]:
    """The probe's JSON object for ``snap`` (``Snapshot.from_dict`` reads it back)."""
    out: dict[str, Any] = {}
    for name in _FIELDS:
        v = getattr(snap, name)
        if name in _NESTED:
            out[name] = _row(v) if v is not None else None
        elif name in _ROWS:
            out[name] = [_row(x) for x in v]
        elif name == "procs":
            continue  # written by the encoder (whole or as a delta)
        elif name == "supervisor":
            out[name] = v.doc if v is not None else None
        elif name == "steps":
            out[name] = _steps(v)
        elif name == "machine":
            out[name] = _machine(v)
        elif name == "workers":
            out[name] = [_row(w) for w in v]
        else:
            out[name] = v
    return out


def diagnosis_dict(diag: Diagnosis) -> dict[str, Any]:
    return {
        "state": diag.run_state,
        "labels": {str(g.index): list(g.codes) for g in diag.gpus if g.codes},
        "findings": [f.to_json() for f in diag.findings],
    }


def event_dict(ev: Event) -> dict[str, Any]:
    return {"time": ev.time, "kind": ev.kind, "severity": ev.severity, "text": ev.text}


# One encoder for every record (``json.dumps`` with options makes one a call): the same text.
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(obj: dict[str, Any]) -> bytes:
    # NaN stays NaN (a loss of nan is a finding): Python's json reads its own NaN back.
    return (_JSON.encode(obj) + "\n").encode()


def _same(row: Any) -> Any:
    return row


def _differs(old: Any, row: Any) -> bool:
    """``old != row``; two process records compared by their fields' dict (a frozen
    dataclass's ``==`` builds two tuples of its fields in Python: a table's worth of rows of
    another parse, every sample). The fields' dict is what ``_row`` writes."""
    if type(old) is Proc and type(row) is Proc:
        return bool(old.__dict__ != row.__dict__)
    return bool(old != row)


_NONE = object()  # no row of that PID last time (a row may be None: it is compared)


class Encoder:
    """Sample records of one segment: the first carries the whole process table.

    What it keeps of the last sample's process table, to tell the rows that changed, is the
    rows as given: from a sample, its frozen ``Proc`` records (shared with the sample; the
    parser hands an unchanged row's record again, so most rows are told by identity), turned
    into dicts only for the rows written; from ``record``, the dicts."""

    def __init__(self) -> None:
        self._procs: dict[Any, Any] | None = {}
        self.first = True
        # From ``sample``: the last table, when no PID repeats in it (its rows by PID are
        # then the table itself: ``procs`` builds them when asked).
        self.table: tuple[Any, ...] | None = None

    @property
    def procs(self) -> dict[Any, Any]:
        """The last sample's process rows by PID, as given."""
        if self._procs is None:
            self._procs = {p.pid: p for p in self.table or ()}
        return self._procs

    def sample(
        self, snap: Snapshot, diag: Diagnosis | None, events: list[Event] | tuple[Event, ...]
    ) -> dict[str, Any]:
        diag_d = diagnosis_dict(diag) if diag is not None else None
        d, evs = snapshot_dict(snap), [event_dict(e) for e in events]
        table, old = snap.procs, self.table
        if old is not None and len(table) == len(old):
            # Most samples: the rows by position, telling an unchanged row by identity (no
            # index by PID, no look at every row). With the same PIDs in the same places,
            # the general case writes the rows that differ, none gone, no order to say.
            moved = [(r, o) for r, o in zip(table, old, strict=True) if r is not o]
            if all(r.pid == o.pid for r, o in moved):
                d["procs_set"] = [_row(r) for r, o in moved if _differs(o, r)]
                d["procs_gone"] = []
                self.table, self._procs = table, None
                return self._finish(d, diag_d, evs)
        rows = {p.pid: p for p in table}
        rec = self._record(d, rows, diag_d, evs, _row)
        if len(rows) == len(table):  # no PID twice: its rows by PID are its rows in order
            self.table = table
        return rec

    def record(
        self,
        d: dict[str, Any],
        rows: dict[Any, dict[str, Any]],
        diag: dict[str, Any] | None,
        events: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The record of probe object ``d`` (without its ``procs``) and its process ``rows``."""
        return self._record(d, rows, diag, events, _same)

    def _record(
        self,
        d: dict[str, Any],
        rows: dict[Any, Any],
        diag: dict[str, Any] | None,
        events: list[dict[str, Any]],
        as_row: Callable[[Any], dict[str, Any]],
    ) -> dict[str, Any]:
        d = dict(d)
        if self.first:
            d["procs"] = [as_row(r) for r in rows.values()]
        else:
            old = self.procs
            d["procs_set"] = [
                as_row(r)
                for pid, r in rows.items()
                if (o := old.get(pid, _NONE)) is not r and (o is _NONE or _differs(o, r))
            ]
            d["procs_gone"] = [pid for pid in old if pid not in rows]
            # The decoder keeps the old rows' order and appends new PIDs: say the order only
            # when the probe's differs from that (rare: a PID back after it had gone).
            kept = [pid for pid in old if pid in rows]
            if kept + [pid for pid in rows if pid not in old] != list(rows):
                d["procs_order"] = list(rows)
        self._procs, self.first = rows, False
        self.table = None
        return self._finish(d, diag, events)

    def _finish(
        self, d: dict[str, Any], diag: dict[str, Any] | None, events: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.first = False
        rec: dict[str, Any] = {"k": "s", "t": d.get("time"), "snap": d}
        if diag is not None:
            rec["diag"] = diag
        if events:
            rec["events"] = events
        return rec


class Decoder:
    """The inverse of ``Encoder`` over one segment's records, in order."""

    def __init__(self) -> None:
        self.procs: dict[Any, dict[str, Any]] = {}  # by PID, as the file has it
        self.rows = RowMemo()  # the records read from them (an unchanged row: the same dict)

    def snap(self, rec: dict[str, Any]) -> dict[str, Any]:
        """The whole probe object of sample record ``rec``; rows of the wrong shape (a record
        is untrusted input) are left out, as ``Snapshot.from_dict`` leaves them."""
        d = dict(rec.get("snap") or {})
        if "procs" in d:
            self.procs = {_pid(r): r for r in as_list(d["procs"]) if isinstance(r, dict)}
        else:
            for pid in as_list(d.pop("procs_gone", None)):
                self.procs.pop(_pid({"pid": pid}), None)
            for r in as_list(d.pop("procs_set", None)):
                if isinstance(r, dict):
                    self.procs[_pid(r)] = r
            order = d.pop("procs_order", None)
            if isinstance(order, list):
                keys = [_pid({"pid": pid}) for pid in order]
                self.procs = {pid: self.procs[pid] for pid in keys if pid in self.procs}
            d["procs"] = list(self.procs.values())
        return d


def _pid(row: dict[str, Any]) -> Any:
    """A row's PID as a key: a PID that is not a number or a string is its text."""
    pid = row.get("pid")
    return pid if isinstance(pid, int | str | None) else repr(pid)[:80]
