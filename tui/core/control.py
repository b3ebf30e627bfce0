"""Run control: launch, kill and restart a run through a Transport and its run directory.

Every action is one POSIX sh script (tui/core/control.sh) sent through ``Transport.run``, so a
local run, an SSH host and a container share this code unchanged, and nothing needs python
where the run lives. All state is read back from the run directory (docs/internals.md): a
supervisor that quits and returns, or a second one, sees the same run. Processes are only ever
signalled as the recorded process group, after checking it is still the run's; never by name.

The app calls ``launch``/``kill``/``restart`` with a ``progress`` callback (it receives
``Progress`` while waiting) and a ``cancel`` object (anything with ``is_set()``, e.g. an
``asyncio.Event``); cancelling the task works too.
"""

from __future__ import annotations

import asyncio
import functools
import re
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tui.core.config import HostConfig
from tui.core.rundir import (
    ALIVE_STATES,
    DEFAULT_START_WINDOW,
    RunReport,
    exit_meaning,
    parse_report,
)
from tui.core.snapshot import Proc, Snapshot
from tui.core.transport import Transport, TransportError

SCRIPT_PATH = Path(__file__).parent / "control.sh"
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ControlError(RuntimeError):
    """An action could not be carried out; the message says why, for the user."""


class Cancel(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class Progress:
    """What a waiting action is waiting for (shown by the app and on the CLI's stderr)."""

    phase: str  # starting | term | kill | release | cache | launch
    message: str
    elapsed: float
    limit: float | None = None
    remaining: tuple[Proc, ...] = ()


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class GpuHold:
    """GPU memory still held by a process of the run."""

    gpu: int | None
    pid: int
    used_mib: int | None
    name: str
    uuid: str | None = None


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


# ---- talking to control.sh ------------------------------------------------------------------


def check_text(name: str, value: str) -> str:
    if any(c in value for c in "\n\r\0"):
        raise ControlError(f"{name}: a newline or NUL is not allowed in {value[:40]!r}")
    return value


def check_root(run_root: str) -> str:
    """The run root as control.sh takes it: ``~`` and ``$HOME`` are the only expansions."""
    rest = run_root
    for home in ("~", "$HOME", "${HOME}"):
        if rest == home or rest.startswith(home + "/"):
            rest = rest[len(home) :]
    if "$" in rest:
        raise ControlError(f"run_root {run_root!r}: only ~ and $HOME are expanded, not other $")
    return check_text("run_root", run_root)


def env_text(env: Iterable[tuple[str, str]]) -> str:
    """The run's env file: ``export K='v'`` lines, every value quoted."""
    lines = []
    for k, v in env:
        if not _ENV_KEY.fullmatch(k):
            raise ControlError(f"env: {k!r} is not a variable name")
        lines.append(f"export {k}={shlex.quote(check_text(f'env {k}', v))}\n")
    return "".join(lines)


@functools.cache
def _script() -> bytes:
    try:
        return SCRIPT_PATH.read_bytes()
    except OSError as exc:  # an install that left the .sh resource out
        raise ControlError(f"{SCRIPT_PATH} is missing ({exc.strerror}): reinstall") from None


async def run_script(
    transport: Transport, verb: str, *args: object, timeout: float = 30.0
) -> RunReport:
    words = (verb, *(str(a) for a in args))
    cmd = "sh -s -- " + " ".join(shlex.quote(w) for w in words)
    res = await transport.run(cmd, _script(), timeout)
    rep = parse_report(res.stdout)
    if res.rc not in (0, 3) and not rep.errors:
        err = res.stderr.strip()[-400:] or "no error text"
        raise ControlError(f"{verb} failed on {transport.label} (exit {res.rc}): {err}")
    return rep


async def read_run(
    transport: Transport, run_root: str, run_id: str | None = None, log_lines: int = 0
) -> RunReport:
    """The latest run (or ``run_id``) as its directory and /proc say now."""
    rep = await run_script(transport, "state", check_root(run_root), run_id or "", log_lines)
    if rep.errors:
        raise ControlError(rep.errors[0])
    return rep


def emit(
    progress: ProgressFn | None,
    phase: str,
    msg: str,
    t0: float,
    limit: float | None,
    remaining: Sequence[Proc] = (),
) -> None:
    if progress is not None:
        progress(Progress(phase, msg, time.monotonic() - t0, limit, tuple(remaining)))


def is_cancelled(cancel: Cancel | None) -> bool:
    return cancel is not None and cancel.is_set()


def describe(procs: Sequence[Proc], limit: int = 4) -> str:
    parts = [f"{p.pid} {p.cmd or '?'} ({p.state})" for p in procs[:limit]]
    more = f" and {len(procs) - limit} more" if len(procs) > limit else ""
    return ", ".join(parts) + more


# ---- launch -----------------------------------------------------------------------------------


def _launch_result(rep: RunReport, start_window: float, pruned: tuple[str, ...]) -> LaunchResult:
    rec = rep.record
    state = rep.state(start_window)
    if rec is None:
        return LaunchResult(False, "none", "launch failed: no run directory was made")
    ok = state in ALIVE_STATES or (state == "exited" and rec.exit_code == 0)
    error = None
    if not ok:
        error = rec.launch_error or f"exit {rec.exit_code}: {exit_meaning(rec.exit_code)}"
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
    return await run_script(
        transport,
        "launch",
        check_root(host.run_root),
        check_text("command", host.command),
        workdir,
        env_text(host.env),
        max(keep, 0),
        int(lock_wait * 1000),
        timeout=lock_wait + 30,
    )


async def launch(
    transport: Transport,
    host: HostConfig,
    *,
    start_window: float = DEFAULT_START_WINDOW,
    keep: int = 0,
    lock_wait: float = 10.0,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
) -> LaunchResult:
    """Start ``host.command`` as a new run unless one is alive; wait out the start window.

    Returns early when the job dies; a failed start carries the launcher's own error text and
    the log's last lines. ``keep`` > 0 prunes the oldest run directories beyond that many.
    """
    try:
        rep = await launch_script(transport, host, keep, lock_wait)
    except ControlError as exc:  # bad input, or the wrapper's own words (`pct: container 200
        # not running`): nothing was started
        return LaunchResult(False, "none", f"launch failed: {exc}", error=str(exc))
    if rep.errors:
        return LaunchResult(False, "none", f"launch failed: {rep.errors[0]}", error=rep.errors[0])
    if rep.alive:
        state = rep.state(start_window)
        msg = f"run {rep.alive} is {state}: kill or restart it first (nothing was started)"
        return LaunchResult(False, state, msg, rep.alive, refused=True, error=msg)
    run_id, pruned, t0 = rep.launched, rep.pruned, time.monotonic()
    while rep.state(start_window) == "starting" and not is_cancelled(cancel):
        if time.monotonic() - t0 > start_window + 30:
            break  # the remote clock does not advance as ours does: do not wait for ever
        emit(progress, "starting", f"run {run_id} starting", t0, start_window, rep.members)
        await asyncio.sleep(poll)
        rep = await read_run(transport, host.run_root, run_id)
    if rep.state(start_window) not in ALIVE_STATES:
        rep = await read_run(transport, host.run_root, run_id, log_lines=20)
    return _launch_result(rep, start_window, pruned)


# ---- kill -------------------------------------------------------------------------------------


async def _signal(transport: Transport, host: HostConfig, run_id: str, sig: str) -> RunReport:
    rep = await run_script(transport, "signal", host.run_root, run_id, sig)
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
    while rep.members and time.monotonic() - t0 < limit and not is_cancelled(cancel):
        seen.update(p.pid for p in rep.members)
        msg = f"SIG{phase.upper()} sent to group {rep.record.pgid}: {len(rep.members)} remain"
        emit(progress, phase, f"{msg}: {describe(rep.members)}", t0, limit, rep.members)
        await asyncio.sleep(poll)
        rep = await read_run(transport, host.run_root, rep.record.id)
    return rep


async def kill(
    transport: Transport,
    host: HostConfig,
    *,
    grace: float = 10.0,
    run_id: str | None = None,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    poll: float = 0.2,
    kill_wait: float = 3.0,
    check_gpu: bool = True,
) -> KillResult:
    """SIGTERM the run's process group, wait ``grace`` s, then SIGKILL what remains.

    control.sh checks, right before each signal, that the recorded PGID is still the run's.
    """
    rep = await read_run(transport, host.run_root, run_id)
    rec = rep.record
    if rec is None:
        return KillResult(True, "no run to kill")
    if rep.verdict == "reused":
        return _refused(rep)
    if rep.verdict != "ours":
        msg = f"run {rec.id} is not running ({rep.state()})"
        return KillResult(True, msg, rec.id, rec.pgid, rep.state())
    seen = {p.pid for p in rep.members}
    rep = await _signal(transport, host, rec.id, "TERM")
    if rep.verdict == "reused":
        return _refused(rep)
    signals = ["TERM"] if rep.signalled else []
    rep = await _wait_gone(transport, host, rep, grace, "term", seen, progress, cancel, poll)
    if rep.members and is_cancelled(cancel):
        msg = f"kill cancelled after SIGTERM; {len(rep.members)} processes remain"
        return KillResult(
            ok=False,
            message=msg,
            run_id=rec.id,
            pgid=rec.pgid,
            state=rep.state(),
            signals=tuple(signals),
            survivors=rep.members,
            cancelled=True,
            pids=frozenset(seen),
        )
    if rep.members:
        rep = await _signal(transport, host, rec.id, "KILL")
        if rep.verdict == "reused":
            return _refused(rep)
        signals += ["KILL"] if rep.signalled else []
        rep = await _wait_gone(transport, host, rep, kill_wait, "kill", seen, progress, None, poll)
    held, note = (), None
    if check_gpu:
        snap, note = await sample(transport, host)
        held = gpu_holders(snap, seen) if snap is not None else ()
    return _kill_result(rep, tuple(signals), held, note, seen)


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
    if rep.members:
        msg = f"run {rec.id}: {len(rep.members)} processes survive SIGKILL: {describe(rep.members)}"
    if held:
        mib = sum(h.used_mib or 0 for h in held)
        msg += f"; {len(held)} GPU processes of the run still hold {mib} MiB"
    return KillResult(
        ok=not rep.members,
        message=msg,
        run_id=rec.id,
        pgid=rec.pgid,
        state=rep.state(),
        signals=signals,
        survivors=rep.members,
        gpu_held=held,
        gpu_note=note,
        pids=frozenset(seen),
    )


# ---- GPUs ---------------------------------------------------------------------------------------


async def sample(transport: Transport, host: HostConfig) -> tuple[Snapshot | None, str | None]:
    """One probe sample, or None and why GPU memory cannot be checked."""
    try:
        from tui.core.feed import sample_once  # the probe; GPU checks degrade without it
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
        GpuHold(index.get(gp.gpu_uuid), gp.pid, gp.used_mib, gp.name, gp.gpu_uuid)
        for gp in snap.gpu_procs
        if gp.pid in want or gp.container_pid in want
    )
