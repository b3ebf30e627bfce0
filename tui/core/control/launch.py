"""Launch a run through a Transport: control.sh makes its run directory and starts the job in
its own session; this waits out the start window and reports what happened."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import ABANDONED, ALIVE_STATES, RunReport, exit_text
from dflash_tui.core.base.timings import LOCK_WAIT_S, START_WINDOW_S
from dflash_tui.core.control.preflight import missing_pipeline
from dflash_tui.core.control.relink import fetch, reread, started_since
from dflash_tui.core.control.script import (
    Cancel,
    ControlError,
    ProgressFn,
    check_root,
    check_text,
    emit,
    env_text,
    is_cancelled,
    run_script,
)
from dflash_tui.core.link import container as containers
from dflash_tui.core.link.transport import Transport, TransportError

# A job that vanished without an exit code, right after a launch through a template container:
# the template's namespace most likely ended with the launch command and took the job along.
NAMESPACE_GONE = (
    "; the container template {spec!r} most likely runs each command in a namespace that ends "
    "with it (as `unshare --fork`, `docker run --rm` or a one-shot `systemd-nspawn` do), which "
    "kills the job it started: use a template that enters a long-lived container (docker exec, "
    "pct exec, nsenter --target PID)"
)


@dataclass(frozen=True)
class LaunchResult:
    ok: bool
    state: str
    message: str
    run_id: str | None = None
    dir: str | None = None
    pid: int | None = None
    pgid: int | None = None
    exit_code: int | None = None
    error: str | None = None  # the launcher's own error text, or why the job ended
    log_tail: tuple[str, ...] = ()
    refused: bool = False  # a run is alive: nothing was started
    pruned: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # entries of the run root that are no run (ignored)

    @property
    def started(self) -> bool:
        """Whether ``run_id`` is a run this launch started (alive, or already ended in its
        start window). Not when the launch was refused beside a live run, failed, or lost its
        link so that the run read back cannot be told this launch's (``_lost_launch``: its
        state is "none", its run the latest there is)."""
        return self.run_id is not None and not self.refused and self.state != "none"


# ---- launch -----------------------------------------------------------------------------------


def _launch_result(
    rep: RunReport, start_window: float, pruned: tuple[str, ...], container: str | None = None
) -> LaunchResult:
    rec = rep.record
    state = rep.state(start_window)
    if rec is None:
        return LaunchResult(False, "none", "launch failed: no run directory was made")
    if state == "starting" and rec.pid is None:
        # Never `starting` without a PID: the start window is over and no pid file came.
        state = "launch-failed"
    ok = state in ALIVE_STATES or (state == "exited" and rec.exit_code == 0)
    error = None
    if not ok:
        if rec.launch_error:
            error = rec.launch_error
        elif rec.pid is None:
            error = ABANDONED if rec.launcher == 0 else "the job wrote no pid file"
        else:
            error = exit_text(rec.exit_code)
        spec = containers.parse(container) if container else None
        vanished = state == "killed" and rec.exit_code is None and rec.kill_requested_at is None
        if vanished and not rec.launch_error and spec is not None and spec.kind == "template":
            error += NAMESPACE_GONE.format(spec=spec.spec)
    if ok:
        msg = f"run {rec.id} {state} (pid {rec.pid}, group {rec.pgid})"
    else:
        msg = f"run {rec.id} {state}: {error}"
    return LaunchResult(
        ok=ok,
        state=state,
        message=msg,
        run_id=rec.id,
        dir=rec.dir,
        pid=rec.pid,
        pgid=rec.pgid,
        exit_code=rec.exit_code,
        error=error,
        log_tail=() if ok else rep.log_tail,
        pruned=pruned,
    )


async def launch_script(
    transport: Transport, host: HostConfig, keep: int, lock_wait: float
) -> RunReport:
    workdir = check_text("workdir", host.workdir or "")
    if workdir.startswith("-"):
        workdir = "./" + workdir  # never read as an option by cd
    env = dict(host.env)
    job = env.get("DFLASH_JOB", "")  # a job member (config_job.member_host): its run says so
    if job:
        job = f"{job} {env.get('NODE_RANK', '')} {env.get('NNODES', '')}"
    return await run_script(
        transport,
        "launch",
        check_root(host.run_root),
        check_text("command", host.command),
        workdir,
        env_text(host.env),
        max(keep, 0),
        int(lock_wait * 1000),
        check_text("job", job),
        timeout=lock_wait + 30,
    )


async def launch(
    transport: Transport,
    host: HostConfig,
    *,
    start_window: float = START_WINDOW_S,
    keep: int = 0,
    lock_wait: float = LOCK_WAIT_S,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
) -> LaunchResult:
    """Start ``host.command`` as a new run unless one is alive; wait out the start window.

    Returns early when the job dies; a failed start carries the launcher's own error text and
    the log's last lines. The bundled pipeline is first checked to be runnable there
    (preflight.py): without torch nothing is started and the error names the install.
    ``keep`` > 0 prunes the oldest run directories beyond that many.
    A link lost on the way is opened again and the run read back (tui/core/control/relink.py):
    the result says what is true on the host, started or not.
    """
    why = await missing_pipeline(transport, host)
    if why is not None:  # before any run directory is made: nothing to clean up
        return LaunchResult(False, "none", f"launch failed: {why}", error=why)
    sent, relinked = time.monotonic(), ""
    try:
        rep = await launch_script(transport, host, keep, lock_wait)
    except ControlError as exc:  # bad input, or the wrapper's own words (`pct: container 200
        # not running`): nothing was started
        return LaunchResult(False, "none", f"launch failed: {exc}", error=str(exc))
    except TransportError as exc:  # did the job start before the link went? Look.
        rep = await reread(transport, host, None, exc, progress=progress)
        ours = started_since(rep, time.monotonic() - sent)
        if not ours:
            return _lost_launch(rep, exc, ours)
        rep = replace(rep, launched=rep.record.id if rep.record else None)
        relinked = f" (the link was lost during the launch, {exc}, and opened again)"
    if rep.errors:
        return LaunchResult(False, "none", f"launch failed: {rep.errors[0]}", error=rep.errors[0])
    if rep.alive:
        state = rep.state(start_window)
        msg = f"run {rep.alive} is {state}: kill or restart it first (nothing was started)"
        rec = rep.record  # the live run's own record: its pid is the one to act on
        return LaunchResult(
            False,
            state,
            msg,
            rep.alive,
            dir=rec.dir if rec else None,
            pid=rec.pid if rec else None,
            pgid=rec.pgid if rec else None,
            refused=True,
            error=msg,
        )
    run_id, pruned, t0 = rep.launched, rep.pruned, time.monotonic()
    notes = tuple(n for n in rep.notes if n.startswith("ignoring "))
    while rep.state(start_window) == "starting" and not is_cancelled(cancel):
        if time.monotonic() - t0 > start_window + 30:
            break  # the remote clock does not advance as ours does: do not wait for ever
        emit(progress, "starting", f"run {run_id} starting", t0, start_window, rep.members)
        await asyncio.sleep(poll)
        rep = await fetch(transport, host, run_id, progress=progress)
    if rep.state(start_window) not in ALIVE_STATES:
        rep = await fetch(transport, host, run_id, log_lines=20, progress=progress)
    res = _launch_result(rep, start_window, pruned, host.container)
    return replace(res, message=res.message + relinked + _noted(notes), notes=notes)


def _noted(notes: tuple[str, ...]) -> str:
    """The run root's foreign entries, said once and short (they are ignored)."""
    if not notes:
        return ""
    more = f" and {len(notes) - 3} more" if len(notes) > 3 else ""
    return " (" + "; ".join(notes[:3]) + more + ")"


def _lost_launch(rep: RunReport, lost: TransportError, ours: bool | None) -> LaunchResult:
    """The link went during the launch and, read back, no run of this launch is there."""
    rec = rep.record
    if ours is None and rec is not None:
        msg = (
            f"launch: the link was lost ({lost}); read back, the latest run {rec.id} is "
            f"{rep.state()}, but the host gave no clock to tell whether this launch started it"
        )
    else:
        older = f" (the latest run, {rec.id}, is older)" if rec is not None else ""
        msg = f"launch: the link was lost ({lost}); read back, no run was started{older}"
    return LaunchResult(False, "none", msg, rec.id if ours is None and rec else None, error=msg)
