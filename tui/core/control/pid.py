"""Kill one process chosen in the process tree, verified by PID and start time (never a name).

The start time read when the user picked it must still match right before each signal, so a
PID the kernel reused for another process is never signalled. Some processes are never signalled
at all: PID 1, kernel threads, and the chain that carries the supervisor (the control command,
its ancestors, their group and session leaders). control.sh's ``pid`` verb refuses them where it
runs (over SSH and in containers too); here, on a plain local transport, our own PID and our
ancestors are refused before anything runs, with a clearer message.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dflash_tui.core.base.snapshot import Proc
from dflash_tui.core.base.timings import KILL_GRACE_S
from dflash_tui.core.control.script import Cancel, ProgressFn, _script, emit, is_cancelled
from dflash_tui.core.link.transport import LocalTransport, Transport


@dataclass(frozen=True)
class PidKillResult:
    ok: bool
    message: str
    signals: tuple[str, ...] = ()
    refused: bool = False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _ppid(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def local_refusal(transport: Transport, pid: int) -> str | None:
    """Why ``pid`` is this app or one of its ancestors, on a plain local transport; else None.

    A container wrapper runs the command in another PID namespace: there our PIDs mean nothing,
    and control.sh's own check (which sees that namespace) is the one that counts. PID 1 is
    left to that check too (its message says why).
    """
    if not isinstance(transport, LocalTransport) or transport.wrap("true") != "true":
        return None
    if pid == os.getpid():
        return f"PID {pid} is this app itself (dflash-tui)"
    p, seen = os.getppid(), 0
    while p > 1 and seen < 512:
        if p == pid:
            return (
                f"PID {pid} ({_comm(pid)}) is an ancestor of this app (its shell, terminal or "
                "session): killing it would kill the app too"
            )
        p, seen = _ppid(p), seen + 1
    return None


def known_refusal(transport: Transport, pid: int, procs: Sequence[Proc] = ()) -> str | None:
    """Why control will refuse ``pid``, as far as the app can tell before asking the host
    (None: only the host can say): PID 1, a kernel thread of the sample (kthreadd and its
    children, where PID 2 is kthreadd), this app and its ancestors. The dialog then offers no
    kill at all; control.sh checks again on the host whatever the app said."""
    if pid == 1:
        return "PID 1 is init: killing it takes the whole machine (or container) down"
    by_pid = {p.pid: p for p in procs}
    kthreadd, me = by_pid.get(2), by_pid.get(pid)
    is_kthreadd = kthreadd is not None and kthreadd.cmd == "[kthreadd]"
    if is_kthreadd and me is not None and (pid == 2 or me.ppid == 2):
        return f"PID {pid} is a kernel thread"
    return local_refusal(transport, pid)


async def _pid(transport: Transport, pid: int, ticks: int, sig: str) -> tuple[str, str]:
    cmd = "sh -s -- " + " ".join(shlex.quote(w) for w in ("pid", str(pid), str(ticks), sig))
    res = await transport.run(cmd, _script(), 30.0)
    lines = res.stdout.strip().splitlines()
    if not lines or lines[-1] != "end":  # control.sh's answer ends with `end`, or was cut short
        lines = [f"pid_error no whole answer (exit {res.rc}): {res.stderr.strip()[-200:]}"]
    else:
        lines = lines[:-1] or ["pid_error no answer"]
    words = lines[-1].split(" ", 1)
    return words[0], words[1] if len(words) > 1 else ""


async def _wait(
    transport: Transport,
    pid: int,
    ticks: int,
    limit: float,
    phase: str,
    progress: ProgressFn | None,
    cancel: Cancel | None,
    poll: float,
) -> bool:
    """True once the process is gone (or its PID belongs to another process now)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit and not is_cancelled(cancel):
        verdict, _ = await _pid(transport, pid, ticks, "0")
        if verdict != "pid_alive":
            return True
        emit(progress, phase, f"SIG{phase.upper()} sent to PID {pid}: still alive", t0, limit)
        await asyncio.sleep(poll)
    verdict, _ = await _pid(transport, pid, ticks, "0")
    return verdict != "pid_alive"


# What each menu signal sends: (signal, seconds to wait for the process to end; None: the
# grace). TERM escalates to KILL; INT is sent once and waited for; USR1 is sent once, not
# waited for (a program that handles it keeps running: that is the point of it).
SEQUENCES: dict[str, tuple[tuple[str, float | None], ...]] = {
    "TERM": (("TERM", None), ("KILL", 3.0)),
    "INT": (("INT", None),),
    "KILL": (("KILL", 3.0),),
    "USR1": (("USR1", 0.0),),
}
SIGNALS = tuple(SEQUENCES)  # the process menu's signals, in its order


async def kill_process(
    transport: Transport,
    *,
    pid: int,
    start_ticks: int,
    grace: float = KILL_GRACE_S,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
    signal: str = "TERM",
) -> PidKillResult:
    """Send ``signal`` (SEQUENCES: TERM waits ``grace`` s, then SIGKILL); each signal only if
    the process is still the same (start time), never to a process control refuses."""
    if signal not in SEQUENCES:
        raise ValueError(f"signal {signal!r} is not one of {', '.join(SIGNALS)}")
    signals: list[str] = []
    why = local_refusal(transport, pid)
    if why is not None:
        return PidKillResult(False, f"refused: {why}; nothing sent", refused=True)
    for sig, wait in SEQUENCES[signal]:
        limit = grace if wait is None else wait
        verdict, detail = await _pid(transport, pid, start_ticks, sig)
        if verdict == "pid_gone":
            return PidKillResult(True, f"PID {pid} is gone", tuple(signals))
        if verdict == "pid_reused":
            return PidKillResult(
                False,
                f"PID {pid} now belongs to another process (start time differs): not signalled",
                tuple(signals),
                refused=True,
            )
        if verdict == "pid_refused":
            why = detail or f"PID {pid} is protected"
            sent = "nothing sent" if not signals else f"SIG{sig} not sent"
            return PidKillResult(False, f"refused: {why}; {sent}", tuple(signals), refused=True)
        if verdict != "pid_signalled":
            return PidKillResult(False, f"PID {pid}: {detail or verdict}", tuple(signals))
        signals.append(sig)
        if limit <= 0:
            return PidKillResult(True, f"SIG{sig} sent to PID {pid}", tuple(signals))
        if await _wait(transport, pid, start_ticks, limit, sig.lower(), progress, cancel, poll):
            how = " then ".join(f"SIG{s}" for s in signals)
            return PidKillResult(True, f"PID {pid} stopped ({how})", tuple(signals))
        if is_cancelled(cancel):
            return PidKillResult(
                False, f"kill of PID {pid} cancelled after SIG{sig}", tuple(signals)
            )
    if signals[-1] != "KILL":  # sent once, not escalated: it may well keep running
        return PidKillResult(
            True, f"PID {pid} still runs {limit:.0f}s after SIG{signals[-1]}", tuple(signals)
        )
    return PidKillResult(False, f"PID {pid} survives SIGKILL (D state?)", tuple(signals))
