"""Run control's shared parts: the control.sh runner, the input checks, and the types that
launch, kill, restart and the one-PID kill share.

Every action is one POSIX sh script (control.sh, beside this file) sent through
``Transport.run``, so a local run, an SSH host and a container share this code unchanged, and
nothing needs python where the run lives. All state is read back from the run directory
(docs/internals.md): a supervisor that quits and returns, or a second one, sees the same run.
Processes are only ever signalled as the recorded process group, after checking it is still
the run's; never by name.

Actions take a ``progress`` callback (it receives ``ActionProgress`` while waiting) and a
``cancel`` object (anything with ``is_set()``, e.g. an ``asyncio.Event``); cancelling the
task works too.
"""

from __future__ import annotations

import functools
import re
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dflash_tui.core.base.rundir import RunReport, parse_report
from dflash_tui.core.base.snapshot import Proc
from dflash_tui.core.link.transport import Transport

SCRIPT_PATH = Path(__file__).parent / "control.sh"
# The launch verb's part, sent ahead of control.sh (which runs the verb at its end).
SCRIPT_PARTS = (Path(__file__).parent / "control_launch.sh", SCRIPT_PATH)
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ControlError(RuntimeError):
    """An action could not be carried out; the message says why, for the user."""


class Cancel(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class ActionProgress:
    """What a waiting action is waiting for (shown by the app and on the CLI's stderr)."""

    phase: str  # starting | term | kill | release | cache | launch
    message: str
    elapsed: float
    limit: float | None = None
    remaining: tuple[Proc, ...] = ()


ProgressFn = Callable[[ActionProgress], None]


# ---- talking to control.sh-----------------------------------------------------------------


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
        return b"".join(part.read_bytes() for part in SCRIPT_PARTS)
    except OSError as exc:  # an install that left a .sh resource out
        raise ControlError(f"{exc.filename} is missing ({exc.strerror}): reinstall") from None


async def run_script(
    transport: Transport, verb: str, *args: object, timeout: float = 30.0
) -> RunReport:
    words = (verb, *(str(a) for a in args))
    cmd = "sh -s -- " + " ".join(shlex.quote(w) for w in words)
    res = await transport.run(cmd, _script(), timeout)
    rep = parse_report(res.stdout)
    # The answer is whole only with its `end` line: an exit status alone (a shell's, a
    # container runtime's, a job's) never stands for one of control.sh's answers.
    if not rep.ended:
        err = res.stderr.strip()[-400:] or "no error text"
        how = "the answer was cut short" if res.stdout.strip() else "no answer"
        raise ControlError(f"{verb} failed on {transport.label} (exit {res.rc}, {how}): {err}")
    return rep


async def fetch_run(
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
        progress(ActionProgress(phase, msg, time.monotonic() - t0, limit, tuple(remaining)))


def is_cancelled(cancel: Cancel | None) -> bool:
    return cancel is not None and cancel.is_set()


def describe(procs: Sequence[Proc], limit: int = 4) -> str:
    parts = [f"{p.pid} {p.cmd or '?'} ({p.state})" for p in procs[:limit]]
    more = f" and {len(procs) - limit} more" if len(procs) > limit else ""
    return ", ".join(parts) + more
