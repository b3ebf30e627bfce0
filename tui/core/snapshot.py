"""Frozen records of one probe sample, parsed from the probe's JSON line.

The probe (``tui/core/probe.py``) writes one JSON object per sample; ``Snapshot.from_json``
turns it into these objects. Parsing is tolerant: a field of the wrong type becomes ``None``
and a malformed row is skipped and recorded in ``Snapshot.errors``, so bad tool output becomes
a finding, never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

PROBE_FORMAT = 1


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v:  # not NaN
        return int(v)
    return None


def _float(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float) and v == v:
        return float(v)
    return None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a GPU, as the driver reports it (host PID inside containers)."""

    pid: int
    gpu_uuid: str | None
    used_mib: int | None
    name: str
    # The PID inside the container, when a host-side probe mapped it (NSpid); None otherwise.
    container_pid: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuProcess | None:
        pid = _int(d.get("pid"))
        if pid is None:
            return None
        return cls(
            pid,
            _str(d.get("gpu_uuid")),
            _int(d.get("used_mib")),
            _str(d.get("name")) or "",
            _int(d.get("container_pid")),
        )


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
        index = _int(d.get("index"))
        if index is None or index < 0:
            return None
        return cls(
            index=index,
            uuid=_str(d.get("uuid")),
            name=_str(d.get("name")),
            bus_id=_str(d.get("bus_id")),
            util=_int(d.get("util")),
            mem_util=_int(d.get("mem_util")),
            mem_used_mib=_int(d.get("mem_used_mib")),
            mem_total_mib=_int(d.get("mem_total_mib")),
            mem_reserved_mib=_int(d.get("mem_reserved_mib")),
            temp_c=_int(d.get("temp_c")),
            power_w=_float(d.get("power_w")),
            power_limit_w=_float(d.get("power_limit_w")),
            sm_clock_mhz=_int(d.get("sm_clock_mhz")),
            mem_clock_mhz=_int(d.get("mem_clock_mhz")),
            pstate=_str(d.get("pstate")),
            throttle_reasons=_int(d.get("throttle_reasons")),
            ecc_uncorrected=_int(d.get("ecc_uncorrected")),
        )


@dataclass(frozen=True)
class Proc:
    """A row of the process table, read from /proc where the probe runs."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start_ticks: int | None
    rss_kb: int | None
    cpu_pct: float | None
    user: str
    cmd: str
    nspid: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proc | None:
        pid, ppid = _int(d.get("pid")), _int(d.get("ppid"))
        if pid is None or ppid is None:
            return None
        pgid = _int(d.get("pgid"))
        sid = _int(d.get("sid"))
        nspid = tuple(x for x in (_int(v) for v in _list(d.get("nspid"))) if x is not None)
        return cls(
            pid=pid,
            ppid=ppid,
            pgid=pgid if pgid is not None else pid,
            sid=sid if sid is not None else pid,
            state=_str(d.get("state")) or "?",
            start_ticks=_int(d.get("start_ticks")),
            rss_kb=_int(d.get("rss_kb")),
            cpu_pct=_float(d.get("cpu_pct")),
            user=_str(d.get("user")) or "?",
            cmd=_str(d.get("cmd")) or "",
            nspid=nspid,
        )

    @property
    def container_pid(self) -> int | None:
        """The PID in the innermost namespace, when it differs from the probe's view."""
        return self.nspid[-1] if len(self.nspid) > 1 else None


@dataclass(frozen=True)
class LogState:
    """A watched log file: whether it exists, its size, and the bytes appended since last sample."""

    path: str
    exists: bool
    size: int | None = None
    mtime: float | None = None
    lines: tuple[str, ...] = ()
    truncated: bool = False  # the file shrank or was replaced: the tail restarted at 0
    skipped_bytes: int = 0  # appended bytes not sent (more than the per-sample cap)
    error: str | None = None
    is_run_log: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LogState | None:
        path = _str(d.get("path"))
        if path is None:
            return None
        return cls(
            path=path,
            exists=bool(d.get("exists")),
            size=_int(d.get("size")),
            mtime=_float(d.get("mtime")),
            lines=tuple(x for x in _list(d.get("lines")) if isinstance(x, str)),
            truncated=bool(d.get("truncated")),
            skipped_bytes=_int(d.get("skipped_bytes")) or 0,
            error=_str(d.get("error")),
            is_run_log=bool(d.get("is_run_log")),
        )


@dataclass(frozen=True)
class RunRecord:
    """What the run directory says about the latest launch (see tui/core/rundir.py)."""

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
    earlier_pgids: tuple[int, ...] = ()  # PGIDs of earlier runs under the same root

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord | None:
        rid, rdir = _str(d.get("id")), _str(d.get("dir"))
        if rid is None or rdir is None:
            return None
        earlier = tuple(x for x in (_int(v) for v in _list(d.get("earlier_pgids"))) if x)
        return cls(
            id=rid,
            dir=rdir,
            command=_str(d.get("command")),
            pid=_int(d.get("pid")),
            pgid=_int(d.get("pgid")),
            start_ticks=_int(d.get("start_ticks")),
            started_at=_float(d.get("started_at")),
            exit_code=_int(d.get("exit_code")),
            ended_at=_float(d.get("ended_at")),
            launch_error=_str(d.get("launch_error")),
            kill_requested_at=_float(d.get("kill_requested_at")),
            log_path=_str(d.get("log_path")),
            events_path=_str(d.get("events_path")),
            earlier_pgids=earlier,
        )


@dataclass(frozen=True)
class Telemetry:
    """Where the GPU readings came from. ``source`` is ``nvml``, ``nvidia-smi`` or ``none``."""

    source: str = "none"
    error: str | None = None
    elapsed_ms: float | None = None


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

    @classmethod
    def from_json(cls, line: str | bytes) -> Snapshot:
        """Parse one probe line. Raises ValueError only when the line is not a JSON object."""
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"probe line is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError("probe line is not a JSON object")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        errors = [x for x in _list(d.get("errors")) if isinstance(x, str)]

        def rows(key: str, parse: Any) -> tuple[Any, ...]:
            out = []
            for raw in _list(d.get(key)):
                row = parse(raw) if isinstance(raw, dict) else None
                if row is None:
                    errors.append(f"skipped a malformed {key} row: {str(raw)[:80]!r}")
                else:
                    out.append(row)
            return tuple(out)

        tel = d.get("telemetry") if isinstance(d.get("telemetry"), dict) else {}
        run = d.get("run")
        return cls(
            time=_float(d.get("time")) or 0.0,
            host=_str(d.get("host")) or "local",
            telemetry=Telemetry(
                source=_str(tel.get("source")) or "none",
                error=_str(tel.get("error")),
                elapsed_ms=_float(tel.get("elapsed_ms")),
            ),
            gpus=rows("gpus", Gpu.from_dict),
            gpu_procs=rows("gpu_procs", GpuProcess.from_dict),
            procs=rows("procs", Proc.from_dict),
            logs=rows("logs", LogState.from_dict),
            run=RunRecord.from_dict(run) if isinstance(run, dict) else None,
            clk_tck=_int(d.get("clk_tck")) or 100,
            boot_time=_float(d.get("boot_time")),
            probe_mode=_str(d.get("probe_mode")) or "python",
            errors=tuple(errors),
        )

    def proc(self, pid: int) -> Proc | None:
        for p in self.procs:
            if p.pid == pid:
                return p
        return None

    def procs_on(self, gpu: Gpu) -> tuple[GpuProcess, ...]:
        return tuple(p for p in self.gpu_procs if gpu.uuid is not None and p.gpu_uuid == gpu.uuid)
