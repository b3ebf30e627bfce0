"""Rows of a probe snapshot as dicts, for the diagnosis unit tests (Snapshot.from_dict)."""

from __future__ import annotations

from typing import Any


def gpu_row(i: int, used: int | None = 0, util: int | None = 0, **kw: Any) -> dict[str, Any]:
    """An H200 with index ``i``, uuid ``GPU-i``, this much memory used and utilisation."""
    return {
        "index": i,
        "uuid": f"GPU-{i}",
        "name": "NVIDIA H200",
        "mem_used_mib": used,
        "util": util,
        "mem_total_mib": 143771,
        **kw,
    }


def proc_row(
    pid: int,
    ppid: int = 100,
    pgid: int | None = None,
    sid: int | None = None,
    start: int = 1000,
    cmd: str = "python3 train.py",
    state: str = "S",
    user: str = "root",
    **kw: Any,
) -> dict[str, Any]:
    """A process: its own group and session leader unless told, started at ``start`` ticks."""
    return {
        "pid": pid,
        "ppid": ppid,
        "pgid": pgid or pid,
        "sid": sid or pgid or pid,
        "state": state,
        "start_ticks": start,
        "user": user,
        "cmd": cmd,
        **kw,
    }
