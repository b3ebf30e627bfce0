"""A process on this machine, told by PID and start time (so a reused PID is not taken for it):
the supervisor's lock and record, and the flight recorder's one writer, check their owners
with these; and the one way to end a command this process started in a session of its own.
(Processes on a GPU host are read by the probe and control.sh instead.)"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, None if it is gone (or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return int(fields[19]) if fields[19].isdigit() else None


def alive(pid: Any, ticks: Any) -> bool:
    """Is process ``pid`` on this machine the one that started at ``ticks``?"""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    now = start_ticks(pid)
    return now is not None and (ticks is None or now == ticks)


def kill_session(pid: int) -> None:
    """SIGKILL the whole session a command was started in (``start_new_session``), by its own
    PGID, the command's PID: ``sh`` and everything under it. Killing only ``sh`` would leave
    its children running and holding the pipes, and a wait on them would never end."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


REAP_S = 5.0  # how long a killed command may take to be reaped before it is left to the kernel


async def end_session(proc: asyncio.subprocess.Process) -> None:
    """Kill the session of a command started with ``start_new_session`` and reap it, for a
    caller that stops waiting on it (a timeout, a cancel, a quit). Left to the collector,
    only ``sh`` would be killed (its children live on), and not even that once the loop is
    closed. The wait is bounded: a process in an uninterruptible sleep (a hung NFS write)
    outlives SIGKILL, and a shutdown must not wait on it."""
    kill_session(proc.pid)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), REAP_S)
