"""Frozen records of one probe sample, parsed from the probe's JSON line.

The probe (``tui/core/probe/main.py``) writes one JSON object per sample; ``Snapshot.from_json``
turns it into these objects. Parsing is tolerant: a field of the wrong type becomes ``None``
and a malformed row is skipped and recorded in ``Snapshot.errors``, so bad tool output becomes
a finding, never a crash. Telemetry values outside what a GPU can report (a utilisation of
1e23 %, negative memory) become unknown (``None``) with an entry in ``errors``, which the
diagnosis turns into the ``telemetry-degraded`` finding: a wild reading is never drawn.
"""

from __future__ import annotations

import functools
import json
from dataclasses import MISSING, dataclass, field, fields, replace
from itertools import compress
from operator import attrgetter, is_not
from typing import Any, TypeVar

from dflash_tui.core.base.fields import (
    as_float,
    as_int,
    as_ints,
    as_list,
    as_number,
    as_str,
    as_strs,
)
from dflash_tui.core.base.machine import Machine, Worker, workers_of
from dflash_tui.core.base.ranges import GPU_LIMITS, PROC_LIMITS, sane
from dflash_tui.core.base.snapshot_delta import ROWS_CAP, ProcTables
from dflash_tui.core.base.snapshot_rows import KeptRows, PlacedRows, RowMemo
from dflash_tui.core.base.supervision import SupervisorRecord

T = TypeVar("T")
_pid = attrgetter("pid")
# What a window copy keeps of each process row (Snapshot.keep_for_window), and where.
_ROW = attrgetter("pid", "pgid", "sid", "cmd")
_ROWS, _CMDS = "_window_rows", "_window_cmds"

PROBE_FORMAT = 1
# One probe line carries a sample's log tails, each capped by the probe at 4 MiB of lines (a
# flood of control bytes grows up to six times as JSON escapes): past this it is not a probe's,
# and it is refused as it is read (tui/core/link/transport.py), not parsed.
PROBE_LINE_MAX = 32 << 20
# Rows one sample may carry, by key: past them the rest are skipped and said in ``errors``.
ERRORS_MAX, ERROR_CHARS = 100, 500  # the probe's errors kept, and each one's length
ROWS_MAX = {"procs": ROWS_CAP, "gpu_procs": 4096, "gpus": 256, "logs": 256}


# Field annotations (strings: ``from __future__ import annotations``) -> tolerant converter.
_COERCE: dict[str, Any] = {
    "int": as_int,
    "int | None": as_int,
    "float | None": as_float,
    "str": as_str,
    "str | None": as_str,
    "bool": lambda v: v if isinstance(v, bool) else None,
    "tuple[int, ...]": as_ints,
    "tuple[str, ...]": as_strs,
    "tuple[tuple[int, str], ...]": lambda v: tuple(
        (i, t)
        for i, t in (x for x in as_list(v) if isinstance(x, list) and len(x) == 2)
        if isinstance(i, int) and not isinstance(i, bool) and isinstance(t, str)
    ),
    "tuple[tuple[int, int | None], ...]": lambda v: tuple(
        (p, t if isinstance(t, int) and not isinstance(t, bool) else None)
        for p, t in (x for x in as_list(v) if isinstance(x, list) and len(x) == 2)
        if isinstance(p, int) and not isinstance(p, bool)
    ),
}


# A field's value that is its own conversion (an int for an int, a str for a str, a bool for a
# bool: ``as_int`` of an int is that int), taken as it is, without the converter's call.
_ITSELF: dict[str, type] = {"int": int, "int | None": int, "str": str, "str | None": str,
                            "bool": bool}  # fmt: skip


class _Never:
    """No value's type: a field whose every value goes through its converter."""


@functools.cache
def _plan(
    cls: type, required: tuple[str, ...]
) -> tuple[tuple[tuple[str, Any, type, Any], ...], frozenset[str]]:
    """Each field's name, converter, the type taken as it is, and its default, in the order of
    ``cls``'s __init__ arguments, worked out once per record class: looking them up per row
    cost more than the conversion (every sample parses every process row of every host). And
    the required fields (no default needed)."""
    plan = []
    for f in fields(cls):
        default = f.default
        plain = f.init and not f.kw_only and f.default_factory is MISSING
        if not plain or (default is MISSING and f.name not in required):
            raise TypeError(f"{cls.__name__}.{f.name}: a plain default or required")
        plan.append((f.name, _COERCE[str(f.type)], _ITSELF.get(str(f.type), _Never), default))
    return tuple(plan), frozenset(required)


def _values(cls: type, d: dict[str, Any], required: tuple[str, ...]) -> list[Any] | None:
    """Every field of ``cls`` from a probe dict, converted, in __init__'s order: a wrong type
    is the field's default; a missing or wrong ``required`` field rejects the row (None)."""
    plan, needed = _plan(cls, required)
    out: list[Any] = []
    get = d.get
    for name, coerce, itself, default in plan:
        value = get(name)
        if type(value) is not itself and (value is None or (value := coerce(value)) is None):
            if name in needed:
                return None
            value = default
        out.append(value)
    return out


def _build(cls: type[T], d: dict[str, Any], required: tuple[str, ...]) -> T | None:
    """``cls`` from a probe dict (see ``_values``)."""
    values = _values(cls, d, required)
    return None if values is None else cls(*values)


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a GPU, as the driver reports it (host PID inside containers)."""

    pid: int
    gpu_uuid: str | None = None
    used_mib: int | None = None
    name: str = ""
    # The PID inside the container, when a host-side probe mapped it (NSpid); None otherwise.
    container_pid: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuProcess | None:
        return _build(cls, d, ("pid",))


@dataclass(frozen=True)
class Gpu:
    """One GPU. ``mem_used_mib`` means nvidia-smi's ``memory.used`` (reserved excluded)."""

    index: int
    uuid: str | None = None
    name: str | None = None
    bus_id: str | None = None
    util: int | None = None
    mem_util: int | None = None
    mem_used_mib: int | None = None
    mem_total_mib: int | None = None
    mem_reserved_mib: int | None = None
    temp_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    pstate: str | None = None
    throttle_reasons: int | None = None
    ecc_uncorrected: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Gpu | None:
        gpu = _build(cls, d, ("index",))
        return gpu if gpu is not None and gpu.index >= 0 else None


@dataclass(frozen=True)
class Proc:
    """A row of the process table, read from /proc where the probe runs (its first four
    fields in this order: ``from_dict`` sets the group and the session by place)."""

    pid: int
    ppid: int
    pgid: int = -1  # -1: not read; from_dict puts the pid there (a group/session of its own)
    sid: int = -1
    state: str = "?"
    start_ticks: int | None = None
    rss_kb: int | None = None
    cpu_pct: float | None = None
    user: str = "?"
    cmd: str = ""
    nspid: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proc | None:
        v = _values(cls, d, ("pid", "ppid"))
        if v is None:
            return None
        # Not read (or nonsense): a group and a session of its own, as the dataclass says.
        pid, ppid, pgid, sid, *rest = v
        return cls(pid, ppid, pgid if pgid >= 0 else pid, sid if sid >= 0 else pid, *rest)

    @property
    def container_pid(self) -> int | None:
        """The PID in the innermost namespace, when it differs from the probe's view."""
        return self.nspid[-1] if len(self.nspid) > 1 else None


@dataclass(frozen=True)
class LogState:
    """A watched log file: whether it exists, its size, and the bytes appended since last sample."""

    path: str
    exists: bool = False
    size: int | None = None
    mtime: float | None = None
    lines: tuple[str, ...] = ()
    truncated: bool = False  # the file shrank or was replaced: the tail restarted at 0
    skipped_bytes: int = 0  # appended bytes not sent (more than the per-sample cap)
    error: str | None = None
    is_run_log: bool = False
    # What the tail could not show, or had to say, each before ``lines[index]``: (index, text).
    gaps: tuple[tuple[int, str], ...] = ()
    resume: str | None = None  # where this tail stopped: a restarted probe resumes there
    followed: str | None = None  # the run log read through the job's stdout: where it is now

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LogState | None:
        return _build(cls, d, ("path",))


@dataclass(frozen=True)
class RunRecord:
    """What the run directory says about the latest launch (see tui/core/base/rundir.py)."""

    id: str
    dir: str
    command: str | None = None
    pid: int | None = None
    pgid: int | None = None
    start_ticks: int | None = None
    started_at: float | None = None
    exit_code: int | None = None
    ended_at: float | None = None
    launch_error: str | None = None
    kill_requested_at: float | None = None
    log_path: str | None = None
    events_path: str | None = None
    born: float | None = None  # the run directory's last change (its mtime), host clock
    launcher: int | None = None  # the launcher still at work on it (no pid file yet), if any
    earlier_pgids: tuple[int, ...] = ()  # PGIDs of earlier runs under the same root
    # (pgid, leader start ticks or None) of the same earlier runs: a reused PGID is not theirs
    earlier_runs: tuple[tuple[int, int | None], ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord | None:
        return _build(cls, d, ("id", "dir"))


@dataclass(frozen=True)
class Telemetry:
    """Where the GPU readings came from. ``source`` is ``nvml``, ``nvidia-smi`` or ``none``."""

    source: str = "none"
    error: str | None = None
    elapsed_ms: float | None = None


@dataclass(frozen=True)
class StepEvent:
    """The last ``step`` event of the run's event stream (nan/inf loss kept as such)."""

    time: float | None = None
    step: int | None = None
    loss: float | None = None
    acc: float | None = None
    tok_s: float | None = None

    @classmethod
    def from_dict(cls, d: Any) -> StepEvent | None:
        if not isinstance(d, dict):
            return None
        num = as_number
        return cls(num(d.get("time")), as_int(d.get("step")), num(d.get("loss")),
                   num(d.get("acc")), num(d.get("tok_s")))  # fmt: skip


def _gpu_sane(gpu: Gpu, errors: list[str]) -> Gpu:
    return sane(gpu, GPU_LIMITS, f"GPU {gpu.index}", errors)


def _gproc_sane(proc: GpuProcess, errors: list[str]) -> GpuProcess:
    return sane(proc, PROC_LIMITS, f"GPU process {proc.pid}", errors)


def _embedded(v: Any, what: str, errors: list[str]) -> Any:
    """The shell probe sends supervisor.json and the last step event as their own JSON text
    (awk cannot check JSON): parsed here; a text that is not JSON is said, not fatal."""
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except (ValueError, RecursionError):  # deep nesting too: the file is the job's to write
        errors.append(f"{what}: not JSON: {v[:80]!r}")
        return None


def _step(v: Any) -> Any:
    """A whole event line (the shell probe's) is a step only if it says so."""
    if isinstance(v, dict) and "event" in v and v.get("event") != "step":
        return None
    return v


@dataclass(frozen=True)
class StepPoints:
    """Step events new since the probe's last sample (its ``steps`` key): ``points`` are
    (time, step, loss, tok/s) from byte ``start`` of the event stream at ``path`` (0: from its
    beginning); ``thinned`` > 1 when a backlog was sent one step in that many."""

    path: str
    start: int
    points: tuple[tuple[float, int | None, float | None, float | None], ...] = ()
    thinned: int = 1

    @classmethod
    def from_dict(cls, d: Any) -> StepPoints | None:
        path, start = (
            (as_str(d.get("path")), as_int(d.get("from"))) if isinstance(d, dict) else (None, None)
        )
        if path is None or start is None:
            return None
        pts = []
        for p in as_list(d.get("points")):
            t = as_float(p[0]) if isinstance(p, list) and len(p) == 4 else None
            if t is not None:
                pts.append((t, as_int(p[1]), as_float(p[2]), as_float(p[3])))
        return cls(path, start, tuple(pts), as_int(d.get("thinned")) or 1)


@dataclass(frozen=True)
class Snapshot:
    time: float
    host: str = "local"
    telemetry: Telemetry = field(default_factory=Telemetry)
    gpus: tuple[Gpu, ...] = ()
    gpu_procs: tuple[GpuProcess, ...] = ()
    procs: tuple[Proc, ...] = ()
    logs: tuple[LogState, ...] = ()
    run: RunRecord | None = None
    clk_tck: int = 100
    boot_time: float | None = None
    probe_mode: str = "python"  # "python" or "shell" (degraded fallback without python3)
    errors: tuple[str, ...] = ()  # malformed rows, unreadable entries: shown as findings
    interval: float | None = None  # seconds between the probe's samples (None: one-shot)
    last_step: StepEvent | None = None  # from the run's event stream, when it writes one
    supervisor: SupervisorRecord | None = None  # <run_root>/supervisor.json, when there is one
    steps: StepPoints | None = None  # new step events of the run's event stream (--interval)
    machine: Machine | None = None  # host memory, disks, kernel log, NVML health (base/machine)
    workers: tuple[Worker, ...] = ()  # each pipeline worker's latest heartbeat

    @classmethod
    def from_json(cls, line: str | bytes, tables: ProcTables | None = None) -> Snapshot:
        """Parse one probe line. Raises ValueError only when the line is not a JSON object
        (or is over ``PROBE_LINE_MAX``), or when its process table is a change list that
        ``tables`` (the stream's previous table; none: no base) cannot apply."""
        if len(line) > PROBE_LINE_MAX:
            raise ValueError(f"probe line of {len(line):,} bytes is over the cap of "
                             f"{PROBE_LINE_MAX:,}: refused")  # fmt: skip
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"probe line is not JSON: {exc}") from None
        except RecursionError:  # arrays nested deeper than the parser recurses
            raise ValueError("probe line is nested too deep to be a probe's") from None
        if not isinstance(data, dict):
            raise ValueError("probe line is not a JSON object")
        if tables is not None:
            data = tables.apply(data)
        elif "procs_delta" in data:
            raise ValueError("probe line: a process-table change list outside a stream")
        return cls.from_dict(data, tables.memo if tables is not None else None)

    @classmethod
    def from_dict(cls, d: dict[str, Any], memo: RowMemo | None = None) -> Snapshot:
        """``d``, a probe's object, as a Snapshot. ``memo``: the source's previous sample's
        process rows (snapshot_rows.py), whose records an unchanged row takes again."""
        # The probe's own error list is untrusted too: a few, each short, are enough to say.
        errors = [
            x[:ERROR_CHARS] for x in as_list(d.get("errors"))[:ERRORS_MAX] if isinstance(x, str)
        ]

        def rows(key: str, parse: Any, kept: KeptRows | None = None) -> tuple[Any, ...]:
            out = []
            given = as_list(d.get(key))
            if len(given) > ROWS_MAX[key]:
                errors.append(
                    f"{len(given):,} {key} rows, over the cap of {ROWS_MAX[key]:,}: "
                    f"the first {ROWS_MAX[key]:,} kept"
                )
                given = given[: ROWS_MAX[key]]
            elif kept is not None and (same := kept.table(given)) is not None:
                return same  # the previous sample's records but for the rows that changed
            for raw in given:
                row = parse(raw) if isinstance(raw, dict) else None
                if row is None:
                    errors.append(f"skipped a malformed {key} row: {str(raw)[:80]!r}")
                else:
                    out.append(row)
            found = tuple(out)
            if kept is not None:
                kept.keep(given, found)
            return found

        def checked(key: str, parse: Any, check: Any) -> tuple[Any, ...]:
            placed = PlacedRows(memo, key, parse)
            rows(key, placed)  # each row parsed, or taken again; the malformed ones said
            return placed.checked(check, errors)  # then each range-checked, in order

        host = as_str(d.get("host")) or "local"
        procs = KeptRows(memo, Proc.from_dict)  # most rows are as the last sample had them
        tel_raw = d.get("telemetry")
        tel = tel_raw if isinstance(tel_raw, dict) else {}
        run = d.get("run")
        step = StepEvent.from_dict(_step(_embedded(d.get("last_step"), "last_step", errors)))
        sup = SupervisorRecord.from_dict(_embedded(d.get("supervisor"), "supervisor", errors))
        snap = cls(
            time=as_float(d.get("time")) or 0.0,
            host=host,
            telemetry=Telemetry(
                source=as_str(tel.get("source")) or "none",
                error=as_str(tel.get("error")),
                elapsed_ms=as_float(tel.get("elapsed_ms")),
            ),
            gpus=checked("gpus", Gpu.from_dict, _gpu_sane),
            gpu_procs=checked("gpu_procs", GpuProcess.from_dict, _gproc_sane),
            procs=rows("procs", procs, procs),
            logs=rows("logs", LogState.from_dict),
            run=RunRecord.from_dict(run) if isinstance(run, dict) else None,
            clk_tck=as_int(d.get("clk_tck")) or 100,
            boot_time=as_float(d.get("boot_time")),
            probe_mode=as_str(d.get("probe_mode")) or "python",
            errors=tuple(errors),
            interval=as_float(d.get("interval")),
            last_step=step,
            supervisor=sup,
            steps=StepPoints.from_dict(d.get("steps")),
            machine=Machine.from_dict(d.get("machine")),
            workers=workers_of(d.get("workers")),
        )
        index = procs.index(snap.procs, _pid)
        if index is not None:  # the diagnosis' PID index, made from the last sample's
            snap.__dict__["_by_pid"] = index
            pgid = snap.run.pgid if snap.run is not None else None
            places = procs.group(snap.procs, pgid) if pgid is not None else None
            if pgid is not None and places is not None:  # and the run's group (each PID
                group = tuple(map(snap.procs.__getitem__, places))  # once: one leader)
                snap.__dict__["_group"] = (pgid, group, index.get(pgid))
        return snap

    @functools.cached_property
    def _by_pid(self) -> dict[int, Proc]:
        # The diagnosis looks PIDs up for every GPU process of every sample in its window:
        # an index, built once per snapshot, instead of scanning thousands of rows each time.
        return {p.pid: p for p in self._table()}

    def _table(self) -> tuple[Proc, ...]:
        """``procs``, for a lookup: a window copy has given its records up, and an empty
        table would answer every lookup wrongly (no such process), never visibly."""
        if _ROWS in self.__dict__:
            raise LookupError(f"sample at {self.time}: a window copy keeps no process records")
        return self.procs

    def proc(self, pid: int) -> Proc | None:
        return self._by_pid.get(pid)

    def group_of(self, pgid: int) -> tuple[tuple[Proc, ...], Proc | None]:
        """The processes whose process group is ``pgid``, in the table's order, and the first
        whose PID is ``pgid`` (its leader, if there). The run's, made as the table was parsed
        (from the last sample's where the stream's change list allowed); another's, a scan."""
        made = self.__dict__.get("_group")
        if made is not None and made[0] == pgid:
            return made[1], made[2]
        procs = self._table()
        return (
            tuple(p for p in procs if p.pgid == pgid),
            next((p for p in procs if p.pid == pgid), None),
        )

    @functools.cached_property
    def _members(self) -> dict[int, tuple[Proc, ...]]:
        return {}  # filled by ``members``, one group at a time

    def members(self, group: int) -> tuple[Proc, ...]:
        """The processes whose group or session is ``group``, in the table's order. Kept for
        each group asked (a run's): the diagnosis asks it of every sample of its window, every
        sample, and an index of every group would cost each kept sample a table's worth."""
        memo = self._members
        found = memo.get(group)
        if found is None:
            found = memo[group] = tuple(p for p in self._table() if group in (p.pgid, p.sid))
        return found

    def member_cmds(self, group: int) -> dict[int, str]:
        """PID -> command line of ``members(group)`` (a later PID twice: its last row). What
        a window copy (``keep_for_window``) still answers, for any group. Kept per group:
        read it, never edit it."""
        rows = self.__dict__.get(_ROWS)
        if rows is None:
            return {p.pid: p.cmd for p in self.members(group)}
        memo: dict[int, dict[int, str]] = self.__dict__.setdefault(_CMDS, {})
        found = memo.get(group)
        if found is None:
            found = memo[group] = {r[0]: r[3] for r in rows if group in (r[1], r[2])}
        return found

    @functools.cached_property
    def parents(self) -> dict[int, int]:
        return {p.pid: p.ppid for p in self._table()}

    def without_log_lines(self) -> Snapshot:
        """This sample with its logs' lines left out (what a history of samples keeps), and
        the PID index and the run's group made as it was parsed (the same table's) with it."""
        out = replace(self, logs=tuple(replace(lg, lines=()) for lg in self.logs))
        for name in ("_by_pid", "_group"):
            if name in self.__dict__:
                out.__dict__[name] = self.__dict__[name]  # never edited: shared
        return out

    def keep_for_window(
        self, before: Snapshot | None, was: tuple[Proc, ...] = ()
    ) -> tuple[Proc, ...]:
        """Make this copy (a tracker's own, its own diagnosis made) hold only what later
        diagnoses read of it: its views and run members are kept on it (diagnose.py,
        ownership.py), and of its process table only ``member_cmds``, for any group (the OOM
        rule asks each sample of its window for the members of the newest sample's run,
        whose group may be one this sample's run record did not name yet). So the table
        becomes its rows' (PID, group, session, command): the very tuple ``before`` (the
        window's previous copy) holds when they are the same, and its rows where they are
        the same, so a minute of samples of a table whose readings move every second holds
        one table of those, not sixty tables of records. Every other lookup of the process
        table (``proc``, ``group_of``, ``members``, ``parents``) then raises: an empty table
        would answer it wrongly.

        ``was``: the records ``before`` gave up (what this returned for it): a record here at
        the same place is the same row there, found by identity, not built and compared.
        Returns the records this copy gives up, for the next."""
        procs = self.procs
        kept = before.__dict__.get(_ROWS) if before is not None else None
        rows: tuple[tuple[int, int, int, str], ...]
        if kept is not None and len(procs) == len(was) == len(kept):
            out, same = list(kept), True
            for i in compress(range(len(procs)), map(is_not, procs, was)):
                row = _ROW(procs[i])
                if row != out[i]:
                    out[i], same = row, False
            rows = kept if same else tuple(out)
        else:
            rows = tuple(map(_ROW, procs))
            if kept is not None and kept != rows:  # rows came or went: the rest are kept's
                shared = {r: r for r in kept}
                rows = tuple([shared.get(r, r) for r in rows])
            elif kept is not None:
                rows = kept
        d = self.__dict__
        for name in ("_by_pid", "parents", "_group", "_members"):
            d.pop(name, None)
        d[_ROWS], d["procs"] = rows, ()  # the copy's own field: nobody else holds this copy
        return procs

    def procs_on(self, gpu: Gpu) -> tuple[GpuProcess, ...]:
        return tuple(p for p in self.gpu_procs if gpu.uuid is not None and p.gpu_uuid == gpu.uuid)
