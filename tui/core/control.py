"""Run control: launch a run through a Transport and its run directory; the script runner,
input checks and types that kill (tui/core/control_kill.py) and restart
(tui/core/control_restart.py) share.

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
from tui.core.snapshot import Proc
from tui.core.transport import Transport

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
