"""Restart and opt-in auto-restart, built on launch (tui/core/control/launch.py) and kill
(tui/core/control/kill.py).

Restart = kill, wait (bounded) until no process of the run is left and its GPUs' memory is back
near idle, optionally clear the compile cache, launch. Auto-restart watches the latest run and
relaunches it after a crash as a ``RestartPolicy`` says (the pure ``AutoRestart`` in
tui/core/base/rundir.py decides; ``supervise`` only carries it out). Under Slurm the run is
its job as Slurm says it, and a restart is a requeue or a new submission
(tui/core/control/slurm/supervise.py), as for the headless supervisor.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import mib
from dflash_tui.core.base.timings import (
    KILL_GRACE_S,
    RELEASE_TIMEOUT_S,
    START_WINDOW_S,
    RestartPolicy,
)
from dflash_tui.core.control import scheduled
from dflash_tui.core.control.kill import (
    KillOptions,
    KillResult,
    gpu_holders,
    kill,
    kill_latest,
    sample,
)
from dflash_tui.core.control.launch import LaunchResult, launch
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.control.script import (
    Cancel,
    ControlError,
    ProgressFn,
    check_text,
    describe,
    emit,
    fetch_run,
    is_cancelled,
    run_script,
)
from dflash_tui.core.control.supervisor_files import live_supervisor
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds
from dflash_tui.core.link.transport import Transport, TransportError

if TYPE_CHECKING:  # the annotations only (typing.Unpack is Python 3.11's)
    from typing_extensions import Unpack


@dataclass(frozen=True)
class RestartResult:
    ok: bool
    message: str
    kill: KillResult | None = None
    launch: LaunchResult | None = None
    cache: str | None = None


def holders_text(snap: Snapshot, pids: set[int], uuids: set[str], th: Thresholds) -> list[str]:
    """What still holds the run's GPUs: each holding process once, then GPUs busy otherwise."""
    holds = gpu_holders(snap, pids)
    gone = " (process gone; the driver has not released it yet)"
    out = [
        f"GPU {h.gpu}: pid {h.pid} {h.name} holds {mib(h.used_mib)}"
        + (gone if snap.proc(h.container_pid or h.pid) is None else "")
        for h in holds
    ]
    named = {h.uuid for h in holds if h.uuid} | {h.gpu for h in holds if h.gpu is not None}
    return out + busy_gpus(snap, uuids, pids, th, skip=named)


def busy_gpus(
    snap: Snapshot,
    uuids: set[str],
    pids: set[int],
    th: Thresholds,
    skip: Collection[str | int] = (),
) -> list[str]:
    """The run's GPUs whose memory, less what other jobs hold, is not yet back near idle."""
    out = []
    for g in snap.gpus:
        if g.uuid not in uuids or g.mem_used_mib is None or g.uuid in skip or g.index in skip:
            continue
        others = sum(
            p.used_mib or 0
            for p in snap.procs_on(g)
            if p.pid not in pids and p.container_pid not in pids
        )
        if g.mem_used_mib - others > th.near_zero_mib:
            out.append(f"GPU {g.index} holds {mib(g.mem_used_mib - others)}")
    return out


async def wait_released(
    transport: Transport,
    host: HostConfig,
    run_id: str | None,
    pids: set[int],
    uuids: set[str],
    *,
    timeout: float = RELEASE_TIMEOUT_S,
    thresholds: Thresholds = DEFAULT,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 1.0,
) -> tuple[bool, str]:
    """Wait until the run has no process left, on a GPU or not, and its GPUs' memory is idle."""
    t0, gpu_ok = time.monotonic(), True
    while True:
        left: list[str] = []
        if run_id is not None:
            rep = await fetch_run(transport, host.run_root, run_id)
            if rep.members:
                left.append(f"{len(rep.members)} processes remain: {describe(rep.members)}")
        if gpu_ok and (pids or uuids):
            snap, note = await sample(transport, host)
            gpu_ok = snap is not None and note is None  # no telemetry: nothing to wait for
            if gpu_ok and snap is not None:
                left += holders_text(snap, pids, uuids, thresholds)
        elapsed = time.monotonic() - t0
        if not left:
            return True, f"released after {elapsed:.1f} s"
        if elapsed >= timeout:
            return False, f"not released after {timeout:g} s: {'; '.join(left)}"
        if is_cancelled(cancel):
            return False, f"cancelled while waiting for release: {'; '.join(left)}"
        emit(progress, "release", "waiting for release: " + "; ".join(left), t0, timeout)
        await asyncio.sleep(poll)


# ---- compile cache, restart, auto-restart --------------------------------------------------------


def cache_path_ok(path: str) -> str | None:
    """Why a configured compile-cache path must not be removed (None: it may be)."""
    parts = path.split("/")
    if not path.startswith("/") or ".." in parts or "." in parts or "" in parts[1:]:
        return f"compile_cache {path!r} must be an absolute path without '.', '..' or '//'"
    if len([p for p in parts if p]) < 2:
        return f"compile_cache {path!r} is too close to / to be removed"
    return None


async def clear_compile_cache(transport: Transport, host: HostConfig) -> str:
    """Remove ``host.compile_cache`` (default ``/tmp/torchinductor_<user>`` of the remote user)."""
    path = check_text("compile_cache", host.compile_cache or "")
    if path and (why := cache_path_ok(path)):
        raise ControlError(why)
    rep = await run_script(transport, "clear-cache", path, path)
    if rep.errors:
        raise ControlError(rep.errors[0])
    if "cleared" in rep.facts:
        return f"cleared the compile cache {rep.facts['cleared']}"
    return f"no compile cache at {rep.facts.get('absent', path)}"


class RestartOptions(TypedDict, total=False):
    """``_restart``'s options, as ``restart`` and ``restart_latest`` pass them on."""

    grace: float
    start_window: float
    release_timeout: float
    clear_cache: bool
    keep: int
    thresholds: Thresholds
    progress: ProgressFn | None
    cancel: Cancel | None
    poll: float


async def restart(
    transport: Transport, host: HostConfig, *, run_id: str | None, **kw: Unpack[RestartOptions]
) -> RestartResult:
    """Kill run ``run_id``, wait until its GPUs are released, optionally clear the cache,
    launch (``_restart``).

    ``run_id`` is the run the caller named: it must still be the root's latest run (not one
    started since by auto-restart or another supervisor), else nothing is done. None says the
    caller saw no run at all: it launches only while the root still has none.
    """
    return await _restart(transport, host, run_id, False, **kw)


async def restart_latest(
    transport: Transport, host: HostConfig, **kw: Unpack[RestartOptions]
) -> RestartResult:
    """Restart the run root's latest run (``kill_latest``), or launch where it has none:
    ``dflash-tui restart``."""
    return await _restart(transport, host, None, True, **kw)


async def _restart(
    transport: Transport,
    host: HostConfig,
    run_id: str | None,
    latest: bool,
    *,
    grace: float = KILL_GRACE_S,
    start_window: float = START_WINDOW_S,
    release_timeout: float = RELEASE_TIMEOUT_S,
    clear_cache: bool = False,
    keep: int = 0,
    thresholds: Thresholds = DEFAULT,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
) -> RestartResult:
    before = await fetch_run(transport, host.run_root)
    newest = before.record.id if before.record is not None else None
    if not latest and newest != run_id:
        named = f"run {run_id}" if run_id else "no run"
        return RestartResult(
            False, f"restart stopped: the latest run is now {newest}, not {named}: nothing done"
        )
    pids = {p.pid for p in before.members}
    uuids: set[str] = set()
    if before.verdict == "ours":
        snap, _ = await sample(transport, host)
        if snap is not None:  # the GPUs the run uses: their memory must come back
            uuids = {h.uuid for h in gpu_holders(snap, pids) if h.uuid}
    common = KillOptions(grace=grace, progress=progress, cancel=cancel, poll=poll, check_gpu=False)
    if latest:
        k = await kill_latest(transport, host, **common)
    elif run_id is None:
        k = KillResult(True, "no run to kill")
    else:
        k = await kill(transport, host, run_id=run_id, **common)
    if k.refused or k.cancelled:
        return RestartResult(False, f"restart stopped: {k.message}", k)
    run_id = k.run_id if before.record is not None else None
    ok, msg = await wait_released(
        transport,
        host,
        run_id,
        pids | set(k.pids),
        uuids,
        timeout=release_timeout,
        thresholds=thresholds,
        progress=progress,
        cancel=cancel,
        poll=max(poll, 0.5),
    )
    if not ok:
        return RestartResult(False, f"restart stopped: {msg}; nothing was launched", k)
    try:
        cache = await clear_compile_cache(transport, host) if clear_cache else None
    except ControlError as exc:
        return RestartResult(False, f"restart stopped: {exc}; nothing was launched", k)
    lr = await launch(
        transport,
        host,
        start_window=start_window,
        keep=keep,
        progress=progress,
        cancel=cancel,
        poll=poll,
    )
    return RestartResult(
        lr.ok, f"{k.message}; {cache + '; ' if cache else ''}{lr.message}", k, lr, cache
    )


async def supervise(
    transport: Transport,
    host: HostConfig,
    policy: RestartPolicy,
    stop: Cancel,
    *,
    on_decision: Callable[[Decision], None] | None = None,
    on_launch: Callable[[LaunchResult], None] | None = None,
    start_window: float = START_WINDOW_S,
    keep: int = 0,
    poll: float = 2.0,
    machine: AutoRestart | None = None,
) -> Decision | None:
    """Auto-restart (opt-in): watch the latest run and relaunch it after a crash, as ``policy``
    says, until ``stop`` is set or the policy gives up (FATAL, returned). While a headless
    supervisor (``dflash-tui supervise``) is live on the run root, every crash is left to it
    (decision ``off``): two loops never restart one crash twice. ``machine``: the policy's
    state to go on from (an earlier loop's count, start and policy, which ``policy`` then does
    not replace), else a new one; what it still holds pending, the earlier loop has said."""
    held = machine.pending() if machine is not None else None
    machine, last = machine or AutoRestart(policy), held[1] if held is not None else None
    while not stop.is_set():
        rep: RunReport
        try:
            rep = await scheduled.latest_run(transport, host)
        except (ControlError, TransportError) as exc:
            decision = Decision("watch", f"cannot read the run: {exc}")
        else:
            now = rep.now if rep.now is not None else time.time()
            decision = machine.observe(rep.record, rep.state(start_window), now)
            if decision.action in ("restart", "fatal"):
                # Never beside a live headless supervisor: the crash is its to handle.
                sup = await live_supervisor(transport, host.run_root)
                if sup is not None:
                    decision = Decision(
                        "off", f"supervised by PID {sup.pid} on {sup.host}: left to it"
                    )
            if decision.action == "restart" and decision.at is not None and now >= decision.at:
                # Say the decision before acting on it: a restart already due when the crash
                # is first seen is launched in this same poll, and its "restart n/N" must not
                # come after the launch it announces.
                if decision != last and on_decision is not None:
                    on_decision(decision)
                last = decision
                res = await scheduled.relaunch_run(
                    transport, host, start_window=start_window, keep=keep
                )
                if on_launch is not None:
                    on_launch(res)
                if res.run_id is not None:
                    machine.restarted(now)
                else:
                    decision = machine.launch_failed(now, res.error or res.message)
        if decision != last and on_decision is not None:
            on_decision(decision)
        last = decision
        if decision.action == "fatal":
            return decision
        for _ in range(max(int(poll / 0.1), 1)):
            if stop.is_set():
                break
            await asyncio.sleep(0.1)
    return last
