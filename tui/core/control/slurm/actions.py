"""launch, kill, restart and the state of a run under Slurm (``scheduler = "slurm"``).

launch submits the batch script (batch.py) with sbatch and records the job id in the run
directory; kill is scancel (Slurm's TERM, then KILL after the grace); restart is ``scontrol
requeue`` when Slurm may requeue the job, else a cancel and a new submission with ``--resume
auto``. The one-live-run rule holds: a queued or running job of this run root refuses a launch.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from dataclasses import dataclass, replace

from dflash_tui.core.base.config_job import resumed
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.base.timings import KILL_GRACE_S
from dflash_tui.core.control.script import ControlError, ProgressFn, emit
from dflash_tui.core.control.slurm import query
from dflash_tui.core.control.slurm.batch import new_run_id, node_command, submit_script
from dflash_tui.core.control.slurm.lock import launch_lock
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.control.slurm.runs import SlurmRun, latest, live_job
from dflash_tui.core.link.slurm_node import is_job_id
from dflash_tui.core.link.transport import Transport

SUBMIT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SlurmResult:
    """What launch, kill or restart did; ``slurm_state`` is Slurm's word on the job after it."""

    ok: bool
    message: str
    state: str = "none"  # ours: queued | running | exited | killed | none
    run_id: str | None = None
    dir: str | None = None
    job_id: str | None = None
    nodes: tuple[str, ...] = ()
    slurm_state: str | None = None
    refused: bool = False
    action: str | None = None  # restart: requeue | resubmit


def _said(job: SlurmJob) -> str:
    where = f" on {', '.join(job.nodes)}" if job.nodes else ""
    why = f" ({job.reason})" if job.reason and job.state in query.QUEUED else ""
    return f"job {job.job_id} {job.state}{why}{where}"


def kill_confirm(run: SlurmRun, job: SlurmJob) -> str:
    """What a confirmation of ``kill`` says it will do: the run, the job id and its nodes
    (``live_job`` gives both; ``cancel_run(job_id=...)`` then acts on that job or refuses)."""
    on = f" on {', '.join(job.nodes)}" if job.nodes else " (queued: no node yet)"
    return f"cancel run {run.run_id}: scancel Slurm job {job.job_id} ({job.state}){on}"


def _result(
    ok: bool,
    msg: str,
    run: SlurmRun,
    job: SlurmJob,
    *,
    refused: bool = False,
    action: str | None = None,
) -> SlurmResult:
    return SlurmResult(
        ok,
        msg,
        state=job.run_state,
        run_id=run.run_id,
        dir=run.dir,
        job_id=job.job_id or None,
        nodes=job.nodes,
        slurm_state=job.state,
        refused=refused,
        action=action,
    )


async def submit_run(
    transport: Transport,
    host: HostConfig,
    *,
    resume: bool = False,
    progress: ProgressFn | None = None,
) -> SlurmResult:
    """Submit ``host.command`` unless a job of this run root is queued or running (asked
    and submitted under the run root's launch lock: of two launches at once, one submits)."""
    async with launch_lock(transport, host.run_root):
        alive = await live_job(transport, host)
        if alive is not None:
            run, job = alive
            msg = f"run {run.run_id} is {_said(job)}: kill or restart it first"
            msg += " (nothing was submitted)"
            return _result(False, msg, run, job, refused=True)
        emit(progress, "launch", "submitting with sbatch", time.monotonic(), None)
        run_id = new_run_id()
        command = resumed(host.command) if resume else host.command
        res = await transport.run(submit_script(host, run_id, command), timeout=SUBMIT_TIMEOUT_S)
    lines = res.stdout[: query.MAX_OUTPUT].splitlines()
    said = dict(ln.split(" ", 1) for ln in lines if " " in ln)
    if res.rc == 3 or "dir" not in said:
        why = safe_label((res.stderr or res.stdout).strip()[-500:], 500)
        raise ControlError(f"cannot make the run directory under {host.run_root}: {why}")
    run = SlurmRun(run_id, said["dir"], said.get("job"))
    if run.job_id is None or not is_job_id(run.job_id):
        why = safe_label(said.get("error", "sbatch gave no job id"), 500)
        return SlurmResult(False, f"launch failed: {why}", "launch-failed", run_id, run.dir)
    job = await query.job(transport, run.job_id)
    return _result(True, f"run {run_id} submitted: {_said(job)}", run, job)


async def _wait_ended(
    transport: Transport, job_id: str, limit: float, poll: float = 0.5
) -> SlurmJob:
    """The job once Slurm no longer runs any of it (or as it is at ``limit``)."""
    t0 = time.monotonic()
    job = await query.job(transport, job_id)
    while job.live and time.monotonic() - t0 < limit:
        await asyncio.sleep(poll)
        job = await query.job(transport, job_id)
    return job


async def cancel(
    transport: Transport, job_id: str, grace: float, progress: ProgressFn | None = None
) -> SlurmJob:
    """scancel: Slurm sends TERM (and KILL after its KillWait); KILL from us after ``grace``."""
    t0 = time.monotonic()
    res = await query.slurm(transport, ["scancel", job_id])
    if res.rc:
        raise ControlError(f"scancel {job_id}: {safe_label(res.stderr.strip(), 300)}")
    emit(progress, "term", f"job {job_id} cancelled: waiting for it to end", t0, grace)
    job = await _wait_ended(transport, job_id, grace)
    if job.live:
        emit(progress, "kill", f"job {job_id} still ends: KILL", t0, grace)
        await query.slurm(transport, ["scancel", "--signal=KILL", "--full", job_id])
        job = await _wait_ended(transport, job_id, grace + 30)
    return job


async def cancel_run(
    transport: Transport,
    host: HostConfig,
    *,
    grace: float = KILL_GRACE_S,
    progress: ProgressFn | None = None,
    job_id: str | None = None,
) -> SlurmResult:
    """Cancel the run root's queued or running job; with ``job_id`` (what a confirmation
    named), only that job: another one found live is refused, never cancelled instead."""
    alive = await live_job(transport, host)
    if alive is None:
        return SlurmResult(False, "no queued or running Slurm job of this run root to kill")
    run, job = alive
    if job_id is not None and job.job_id != job_id:
        msg = f"job {job_id} is not the run root's live job (job {job.job_id} is): nothing done"
        return _result(False, msg, run, job, refused=True)
    # Said in the run directory first: a supervisor restarts a job cancelled by someone else,
    # not one stopped on request.
    mark = shlex.quote(f"{run.dir}/kill_requested")
    said = await transport.run(f"date +%s >{mark}", timeout=30)
    if said.rc:  # unsaid, a supervisor would take the cancel for a crash and requeue the job
        why = safe_label(said.stderr, 300) or f"exit {said.rc}"
        msg = f"run {run.run_id}: cannot mark the kill as asked ({why}): job {job.job_id} left"
        return _result(False, msg, run, job, refused=True)
    ended = await cancel(transport, str(job.job_id), grace, progress)
    ok = not ended.live
    word = "ended" if ok else "is still ending"
    return _result(ok, f"run {run.run_id}: {_said(replace(ended, nodes=job.nodes))} ({word})",
                   run, replace(ended, nodes=ended.nodes or job.nodes))  # fmt: skip


async def requeue(transport: Transport, job_id: str) -> str | None:
    """``scontrol requeue``; None when done, else Slurm's reason it was not.

    The requeued job waits out the cluster's credential lifetime before it starts again
    (``cred_expire`` of AuthInfo, 120 s unless set): its nodes refuse the old job's credential
    until then, so it is not hurried."""
    res = await query.slurm(transport, ["scontrol", "requeue", job_id])
    return safe_label(res.stderr.strip() or res.stdout.strip(), 300) if res.rc else None


async def _resume_command(transport: Transport, run: SlurmRun, job: SlurmJob) -> None:
    """The requeued job runs its own command again (the run directory's), with ``--resume
    auto`` now; on as many nodes as the job holds."""
    assert run.command is not None
    command = node_command(resumed(run.command), max(len(job.nodes), 1))
    script = f"printf '%s' {shlex.quote(command)} >{shlex.quote(run.dir + '/command')}"
    res = await transport.run(script, timeout=30)
    if res.rc:
        raise ControlError(f"cannot rewrite {run.dir}/command: {safe_label(res.stderr, 300)}")


async def requeue_or_resubmit(
    transport: Transport,
    host: HostConfig,
    *,
    grace: float = KILL_GRACE_S,
    progress: ProgressFn | None = None,
    run_id: str | None = None,
) -> SlurmResult:
    """Requeue the latest job where Slurm may; else cancel it and submit with --resume auto.
    With ``run_id`` (the run a confirm named) it acts only while that run is still the latest:
    a run submitted since is another's to restart, and is refused, not requeued."""
    found = await latest(transport, host)
    if run_id is not None and (found is None or found[0].run_id != run_id):
        latest_id = found[0].run_id if found is not None else "none"
        return SlurmResult(
            False, f"run {run_id} is no longer the latest (now: {latest_id}): not restarted",
            state="unknown", run_id=run_id, refused=True, action="restart",
        )  # fmt: skip
    if found is None or not found[1].job_id:
        return await submit_run(transport, host, progress=progress)
    run, job = found
    why = None
    known = job.source in ("squeue", "sacct", "scontrol")  # Slurm still has the job
    if known and job.requeue is not False and run.command is not None:
        await _resume_command(transport, run, job)
        why = await requeue(transport, job.job_id)
        if why is None:
            now = await query.job(transport, job.job_id)
            return _result(True, f"run {run.run_id}: requeued, {_said(now)}", run, now,
                           action="requeue")  # fmt: skip
    if job.live:
        await cancel(transport, job.job_id, grace, progress)
    res = await submit_run(transport, host, resume=True, progress=progress)
    note = f" (not requeued: {why})" if why else ""
    return replace(res, message=res.message + note, action="resubmit")
