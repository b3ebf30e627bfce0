"""Run control for a job across hosts (config_job): launch, kill and restart on every member.

A launch starts the same command on every member at once, each with the rendezvous in its
environment (config_job.member_host); if any member fails to start, the members that did are
killed again: a job is whole or not there (its ranks would wait on the missing one). A kill
acts on all members at once. A restart kills every member, waits until every member's GPU
memory is released (restart.wait_released, as a single-host restart does), then launches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dflash_tui.core.base.config_job import elastic_warning, member_host
from dflash_tui.core.base.config_types import HostConfig, JobConfig
from dflash_tui.core.base.timings import KILL_GRACE_S, RELEASE_TIMEOUT_S, START_WINDOW_S
from dflash_tui.core.control.kill import KillResult, gpu_holders, kill_latest, sample
from dflash_tui.core.control.launch import LaunchResult, launch
from dflash_tui.core.control.restart import wait_released
from dflash_tui.core.control.script import ControlError, ProgressFn, fetch_run
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.transport import Transport, TransportError

T = TypeVar("T")


@dataclass(frozen=True)
class JobResult:
    """What one action on a job did: ok when it did on every member."""

    ok: bool
    message: str
    job: str
    members: tuple[tuple[str, Any], ...] = ()  # (label, LaunchResult | KillResult | str)
    warnings: tuple[str, ...] = ()


def members_of(job: JobConfig, hosts: Sequence[HostConfig]) -> list[HostConfig]:
    by_label = {h.label: h for h in hosts}
    return [by_label[label] for label in job.members]


async def on_members(
    hosts: Sequence[HostConfig], act: Callable[[Transport, HostConfig], Awaitable[T]]
) -> list[T | str]:
    """``act`` on every member at once, each over its own link; an error is its message."""

    async def one(host: HostConfig) -> T | str:
        transport = make_transport(host)
        try:
            return await act(transport, host)
        except (ControlError, TransportError) as exc:
            return f"{host.label}: {exc}"
        finally:
            await transport.close()

    return list(await asyncio.gather(*(one(h) for h in hosts)))


def _said(label: str, r: Any) -> str:
    return f"{label}: {r if isinstance(r, str) else r.message}"


async def launch_job(
    job: JobConfig,
    hosts: Sequence[HostConfig],
    *,
    start_window: float = START_WINDOW_S,
    keep: int = 0,
    resume: bool = False,
    progress: ProgressFn | None = None,
    grace: float = KILL_GRACE_S,
) -> JobResult:
    """Start the job on every member; if one does not start, stop the others again."""
    members = [member_host(job, h, resume=resume) for h in members_of(job, hosts)]
    warn = elastic_warning(members[0].command)

    async def start(t: Transport, h: HostConfig) -> LaunchResult:
        return await launch(t, h, start_window=start_window, keep=keep, progress=progress)

    results = await on_members(members, start)
    pairs = tuple(zip(job.members, results, strict=True))
    ok = all(isinstance(r, LaunchResult) and r.ok for r in results)
    text = "; ".join(_said(label, r) for label, r in pairs)
    if not ok:
        # A half-started job waits on its missing ranks: stop what this launch started.
        started = [
            m
            for m, r in zip(members, results, strict=True)
            if isinstance(r, LaunchResult) and r.ok and not r.refused
        ]
        if started:
            await on_members(started, lambda t, h: kill_latest(t, h, grace=grace, check_gpu=False))
            text += f"; stopped again on {', '.join(h.label for h in started)}"
    verb = "launched" if ok else "launch failed"
    return JobResult(ok, f"job {job.name} {verb}: {text}", job.name, pairs, (warn,) if warn else ())


async def kill_job(
    job: JobConfig,
    hosts: Sequence[HostConfig],
    *,
    grace: float = KILL_GRACE_S,
    progress: ProgressFn | None = None,
    check_gpu: bool = True,
) -> JobResult:
    """Kill the job's run on every member at once."""

    async def stop(t: Transport, h: HostConfig) -> KillResult:
        return await kill_latest(t, h, grace=grace, progress=progress, check_gpu=check_gpu)

    results = await on_members(members_of(job, hosts), stop)
    pairs = tuple(zip(job.members, results, strict=True))
    ok = all(isinstance(r, KillResult) and r.ok for r in results)
    text = "; ".join(_said(label, r) for label, r in pairs)
    return JobResult(
        ok, f"job {job.name} {'killed' if ok else 'kill failed'}: {text}", job.name, pairs
    )


async def _kill_and_release(
    t: Transport, h: HostConfig, grace: float, release_timeout: float, progress: ProgressFn | None
) -> str:
    """Kill the member's run and wait for its processes and GPU memory to go ('' when so)."""
    before = await fetch_run(t, h.run_root)
    pids = {p.pid for p in before.members}
    uuids: set[str] = set()
    if before.verdict == "ours":
        snap, _ = await sample(t, h)
        if snap is not None:
            uuids = {g.uuid for g in gpu_holders(snap, pids) if g.uuid}
    k = await kill_latest(t, h, grace=grace, progress=progress, check_gpu=False)
    if k.refused:
        return k.message
    run_id = k.run_id if before.record is not None else None
    ok, msg = await wait_released(
        t, h, run_id, pids | set(k.pids), uuids, timeout=release_timeout, progress=progress
    )
    return "" if ok else msg


async def restart_job(
    job: JobConfig,
    hosts: Sequence[HostConfig],
    *,
    grace: float = KILL_GRACE_S,
    start_window: float = START_WINDOW_S,
    release_timeout: float = RELEASE_TIMEOUT_S,
    keep: int = 0,
    resume: bool = False,
    progress: ProgressFn | None = None,
) -> JobResult:
    """Kill every member, wait for every member's release, then launch the whole job."""
    members = members_of(job, hosts)
    waits = await on_members(
        members, lambda t, h: _kill_and_release(t, h, grace, release_timeout, progress)
    )
    held = [f"{h.label}: {w}" for h, w in zip(members, waits, strict=True) if w]
    if held:
        return JobResult(
            False,
            f"job {job.name} restart stopped: {'; '.join(held)}; nothing was launched",
            job.name,
        )
    res = await launch_job(
        job,
        hosts,
        start_window=start_window,
        keep=keep,
        resume=resume,
        progress=progress,
        grace=grace,
    )
    return JobResult(
        res.ok, f"job {job.name} restarted: {res.message}", job.name, res.members, res.warnings
    )
