"""Kill a run: SIGTERM its process group, wait, SIGKILL what remains, then check its GPU memory.

Built on tui/core/control/launch.py's script runner: control.sh checks, right before each
signal, that the recorded PGID is still the run's, so a reused PGID is refused, never
signalled. Processes are only ever signalled as that group; never by name. Restart
(tui/core/control/restart.py) uses ``kill``, ``sample`` and ``gpu_holders`` from here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.base.text import mib
from dflash_tui.core.base.timings import KILL_GRACE_S, KILL_LOCK_WAIT_S
from dflash_tui.core.control.script import (
    Cancel,
    ControlError,
    ProgressFn,
    describe,
    emit,
    fetch_run,
    is_cancelled,
    run_script,
)
from dflash_tui.core.link.transport import Transport, TransportError

if TYPE_CHECKING:  # the annotations only (typing.Unpack is Python 3.11's)
    from typing_extensions import Unpack


@dataclass(frozen=True)
class GpuHold:
    """GPU memory still held by a process of the run."""

    gpu: int | None
    pid: int
    used_mib: int | None
    name: str
    uuid: str | None = None
    container_pid: int | None = None  # the PID in the probe's own table, when mapped


@dataclass(frozen=True)
class KillResult:
    ok: bool
    message: str
    run_id: str | None = None
    pgid: int | None = None
    state: str = "none"
    signals: tuple[str, ...] = ()
    survivors: tuple[Proc, ...] = ()  # alive after SIGKILL (D state: stuck in the kernel)
    gpu_held: tuple[GpuHold, ...] = ()
    gpu_note: str | None = None  # why GPU memory could not be checked
    refused: bool = False  # the PGID is no longer the run's: nothing was signalled
    cancelled: bool = False
    pids: frozenset[int] = frozenset()  # every process of the group seen during the kill


async def _signal(transport: Transport, host: HostConfig, run_id: str, sig: str) -> RunReport:
    lock_ms = int(KILL_LOCK_WAIT_S * 1000)
    rep = await run_script(transport, "signal", host.run_root, run_id, sig, lock_ms)
    if rep.errors and not rep.record:
        raise ControlError(rep.errors[0])
    return rep


def _refused(rep: RunReport) -> KillResult:
    rec = rep.record
    assert rec is not None
    msg = (
        f"run {rec.id}: process group {rec.pgid} now belongs to another process (its start "
        "time differs from the recorded one): nothing was signalled"
    )
    return KillResult(False, msg, rec.id, rec.pgid, rep.state(), refused=True)


def left(rep: RunReport) -> tuple[Proc, ...]:
    """The run's processes still there: its group, its strays, and the others (its cgroup's, or
    its members' children that dropped the marker)."""
    return rep.members + rep.others


async def _wait_gone(
    transport: Transport,
    host: HostConfig,
    rep: RunReport,
    limit: float,
    phase: str,
    seen: set[int],
    progress: ProgressFn | None,
    cancel: Cancel | None,
    poll: float,
) -> RunReport:
    assert rep.record is not None
    t0 = time.monotonic()
    while left(rep) and time.monotonic() - t0 < limit and not is_cancelled(cancel):
        seen.update(p.pid for p in left(rep))
        msg = f"SIG{phase.upper()} sent to group {rep.record.pgid}: {len(left(rep))} remain"
        emit(progress, phase, f"{msg}: {describe(left(rep))}", t0, limit, left(rep))
        await asyncio.sleep(poll)
        rep = await fetch_run(transport, host.run_root, rep.record.id)
    return rep


class KillOptions(TypedDict, total=False):
    """``_kill``'s options, as ``kill`` and ``kill_latest`` pass them on."""

    grace: float
    progress: ProgressFn | None
    cancel: Cancel | None
    poll: float
    kill_wait: float
    check_gpu: bool


async def kill(
    transport: Transport,
    host: HostConfig,
    *,
    run_id: str | None,
    **kw: Unpack[KillOptions],
) -> KillResult:
    """SIGTERM the group of run ``run_id``, wait, then SIGKILL what remains (``_kill``).

    ``run_id`` is the run the caller named (the app's confirm dialog): without one nothing is
    signalled (``ControlError``), never "the latest run", which may be another run by the time
    the signal goes.
    """
    if not run_id:
        raise ControlError("kill: no run named: nothing was signalled")
    return await _kill(transport, host, run_id, **kw)


async def kill_latest(
    transport: Transport, host: HostConfig, **kw: Unpack[KillOptions]
) -> KillResult:
    """Kill the run root's latest run as the launch lock's holder finds it (a launch half-way
    is left a kill it carries out itself): ``dflash-tui kill``, and a job's members."""
    return await _kill(transport, host, "", **kw)


async def _kill(
    transport: Transport,
    host: HostConfig,
    run_id: str,
    *,
    grace: float = KILL_GRACE_S,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
    kill_wait: float = 3.0,
    check_gpu: bool = True,
) -> KillResult:
    """SIGTERM the group of run ``run_id`` ("": the latest), wait ``grace`` s, then SIGKILL
    what remains. control.sh checks, right before each signal, that the recorded PGID is
    still the run's."""
    # The signal verb takes the launch lock first: no launch is half-way while it looks, or the
    # launcher is left a kill it carries out itself (docs/internals.md).
    try:  # what was there before the signal (some die at once): their GPU memory is checked
        seen = {p.pid for p in left(await fetch_run(transport, host.run_root, run_id))}
    except ControlError:
        seen = set()
    rep = await _signal(transport, host, run_id, "TERM")
    rec = rep.record
    if rec is None:
        return KillResult(True, "no run to kill")
    if rep.verdict == "reused":
        return _refused(rep)
    if not left(rep) and not rep.signalled:
        return _not_running(rep)
    seen.update(p.pid for p in left(rep))
    signals = ["TERM"] if rep.signalled else []
    rep = await _wait_gone(transport, host, rep, grace, "term", seen, progress, cancel, poll)
    if left(rep) and is_cancelled(cancel):
        msg = f"kill cancelled after SIGTERM; {len(left(rep))} processes remain"
        return KillResult(
            ok=False,
            message=msg,
            run_id=rec.id,
            pgid=rec.pgid,
            state=rep.state(),
            signals=tuple(signals),
            survivors=left(rep),
            cancelled=True,
            pids=frozenset(seen),
        )
    if left(rep):
        rep = await _signal(transport, host, rec.id, "KILL")
        if rep.verdict == "reused":
            return _refused(rep)
        signals += ["KILL"] if rep.signalled else []
        rep = await _wait_gone(transport, host, rep, kill_wait, "kill", seen, progress, None, poll)
    held: tuple[GpuHold, ...] = ()
    note: str | None = None
    if check_gpu:
        snap, note = await sample(transport, host)
        held = gpu_holders(snap, seen) if snap is not None else ()
    return _kill_result(rep, tuple(signals), held, note, seen)


# Said after a kill where the run has no cgroup of its own: what cannot be vouched for.
NO_CGROUP = (
    "this host gave the run no cgroup, so a process that left its group, dropped its "
    "DFLASH_RUN_DIR marker and lost its parent before the kill cannot be accounted for"
)


def _not_running(rep: RunReport) -> KillResult:
    """Nothing of the run is alive; a launch still at work was told not to start (or to stop)
    its job."""
    rec = rep.record
    assert rec is not None
    state = rep.state()
    if rep.kill_pending is not None or (state == "starting" and rec.pid is None):
        who = f"launcher PID {rep.kill_pending}" if rep.kill_pending else "its launcher"
        msg = f"run {rec.id} was still being launched: {who} will not start the job"
        return KillResult(True, msg, rec.id, rec.pgid, state)
    return KillResult(True, f"run {rec.id} is not running ({state})", rec.id, rec.pgid, state)


def _kill_result(
    rep: RunReport,
    signals: tuple[str, ...],
    held: tuple[GpuHold, ...],
    note: str | None,
    seen: set[int],
) -> KillResult:
    rec = rep.record
    assert rec is not None
    how = " then ".join(f"SIG{s}" for s in signals) or "no signal (already gone)"
    msg = f"run {rec.id} stopped ({how})"
    if rep.cgroup is None:
        msg += f"; {NO_CGROUP}"
    if left(rep):
        msg = f"run {rec.id}: {len(left(rep))} processes survive SIGKILL: {describe(left(rep))}"
    if held:
        total = sum(h.used_mib or 0 for h in held)
        msg += f"; {len(held)} GPU processes of the run still hold {mib(total)}"
    return KillResult(
        ok=not left(rep),
        message=msg,
        run_id=rec.id,
        pgid=rec.pgid,
        state=rep.state(),
        signals=signals,
        survivors=left(rep),
        gpu_held=held,
        gpu_note=note,
        pids=frozenset(seen),
    )


# ---- GPUs ---------------------------------------------------------------------------------------


async def sample(transport: Transport, host: HostConfig) -> tuple[Snapshot | None, str | None]:
    """One probe sample, or None and why GPU memory cannot be checked."""
    try:
        from dflash_tui.core.link.feed import (
            sample_once,  # the probe; GPU checks degrade without it
        )
    except (ImportError, OSError) as exc:
        return None, f"GPU memory not checked: the probe is unavailable ({exc})"
    try:
        snap = await sample_once(transport, host)
    except TransportError as exc:
        return None, f"GPU memory not checked: {exc}"
    if snap.telemetry.source == "none":
        return snap, f"GPU memory not checked: {snap.telemetry.error or 'no GPU telemetry'}"
    return snap, None


def gpu_holders(snap: Snapshot, pids: Iterable[int]) -> tuple[GpuHold, ...]:
    """GPU processes that belong to the run (by PID, or the container PID the probe mapped)."""
    want = set(pids)
    index = {g.uuid: g.index for g in snap.gpus}
    return tuple(
        GpuHold(index.get(gp.gpu_uuid), gp.pid, gp.used_mib, gp.name, gp.gpu_uuid, gp.container_pid)
        for gp in snap.gpu_procs
        if gp.pid in want or gp.container_pid in want
    )
