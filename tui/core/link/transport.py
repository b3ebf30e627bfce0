"""How commands reach the machine where the GPUs are.

One interface for this machine (a subprocess) and remote hosts (asyncssh, tui/core/link/ssh.py):
``stream`` runs one long-lived command and yields its stdout lines (the probe), ``run`` runs a
short command to completion (control). Commands are POSIX ``sh`` strings; every value inside
them is quoted with ``shlex.quote`` by the caller. A container wrapper (tui/core/link/container.py)
is applied by the transport to every command, so callers never think about containers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from dflash_tui.core.base.lines import LineSplitter
from dflash_tui.core.base.local_proc import end_session
from dflash_tui.core.base.snapshot import PROBE_LINE_MAX
from dflash_tui.core.link.errors import TransportError as TransportError  # its callers' name

Wrap = Callable[[str], str]


CHUNK = 1 << 16
# What ``run`` keeps of a command's output: a one-shot probe prints one line (capped), control
# commands print a few; anything past it is counted, not held.
RUN_OUT_MAX = PROBE_LINE_MAX + CHUNK
RUN_ERR_MAX = 1 << 16
OVERSIZE = "\x00oversize "  # a refused line's stand-in: no probe line starts with NUL

Read = Callable[[int], Awaitable[bytes]]


def oversize_line(size: int) -> str:
    """What ``read_lines`` yields for a line over the cap: its size, nothing of it."""
    return f"{OVERSIZE}{size}"


def oversize_of(line: str) -> int | None:
    """The size of a refused line (see ``oversize_line``), or None for a real line."""
    return int(line[len(OVERSIZE) :]) if line.startswith(OVERSIZE) else None


def refused(size: int) -> str:
    """The words for a probe line over the cap (a finding's, or an unreachable host's)."""
    return f"a probe line of {size:,} bytes is over the cap of {PROBE_LINE_MAX:,}: refused"


async def read_lines(read: Read, cap: int = PROBE_LINE_MAX) -> AsyncIterator[str]:
    """The lines of a byte stream (without newline), read a chunk at a time: a line over
    ``cap`` is dropped as it streams and stands as ``oversize_line`` (memory holds one capped
    line at most, whatever the other side sends)."""
    split = LineSplitter(cap)
    while chunk := await read(CHUNK):
        for line in split.feed(chunk):
            yield _text(line)
    last = split.end()
    if last is not None:
        yield _text(last)


def _text(line: bytes | int) -> str:
    return oversize_line(line) if isinstance(line, int) else line.decode("utf-8", "replace")


async def read_capped(read: Read, cap: int) -> tuple[bytes, int]:
    """A stream to its end: its first ``cap`` bytes, and how many more were dropped."""
    keep, dropped = bytearray(), 0
    while chunk := await read(CHUNK):
        room = max(cap - len(keep), 0)
        keep += chunk[:room]
        dropped += len(chunk) - min(room, len(chunk))
    return bytes(keep), dropped


@dataclass(frozen=True)
class CommandResult:
    rc: int
    stdout: str
    stderr: str
    dropped: int = 0  # stdout bytes past ``RUN_OUT_MAX``, not kept

    @property
    def ok(self) -> bool:
        return self.rc == 0


def _identity(cmd: str) -> str:
    return cmd


class Transport(ABC):
    """Carries commands to one machine (optionally into a container on it)."""

    label: str = "local"
    python: str = "python3"

    def __init__(self, wrap: Wrap | None = None) -> None:
        self.wrap: Wrap = wrap or _identity

    @abstractmethod
    def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        """Run ``cmd`` and yield its stdout lines (without newline) until it ends."""

    @abstractmethod
    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        """Run ``cmd`` to completion; raise TransportError if the machine cannot be reached."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    @property
    def connected(self) -> bool:
        return True


class LocalTransport(Transport):
    """This machine: commands run under ``sh -c`` as subprocesses."""

    def __init__(self, wrap: Wrap | None = None, python: str | None = None) -> None:
        super().__init__(wrap)
        self.label = "local"
        # The probe is stdlib-only. On this machine our own interpreter is known to exist (and
        # has nvidia-ml-py when the nvml extra is installed); inside a container python3 may
        # be missing, so the loader falls back to the shell probe there.
        if python or os.environ.get("DFLASH_TUI_PYTHON"):
            self.python = python or shlex.quote(os.environ["DFLASH_TUI_PYTHON"])
        elif wrap:
            from dflash_tui.core.probe.loader import launcher

            self.python = launcher()
        else:
            self.python = shlex.quote(sys.executable)

    async def _spawn(self, cmd: str, stdin: bytes | None) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            self.wrap(cmd),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C in the app's terminal must not hit the probe
        )

    async def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        proc = await self._spawn(cmd, stdin)
        try:
            if stdin is not None and proc.stdin is not None:
                proc.stdin.write(stdin)
                await proc.stdin.drain()
                proc.stdin.close()
            assert proc.stdout is not None
            async for line in read_lines(proc.stdout.read):
                yield line
            await proc.wait()
            if proc.returncode:
                err = b""
                if proc.stderr is not None:
                    err = await proc.stderr.read()
                raise TransportError(
                    f"probe exited with {proc.returncode}: {err.decode('utf-8', 'replace')[-500:]}"
                )
        finally:
            if proc.returncode is None:
                await end_session(proc)

    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        proc = await self._spawn(cmd, stdin)
        deadline = time.monotonic() + timeout
        try:
            (out, dropped), (err, _) = await asyncio.wait_for(self._output(proc, stdin), timeout)
        except asyncio.TimeoutError:
            await end_session(proc)
            raise TransportError(f"command timed out after {timeout:.0f}s") from None
        except asyncio.CancelledError:
            finish_later(proc, deadline, wrapped=self.wrap is not _identity)
            raise
        return CommandResult(
            proc.returncode or 0,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            dropped,
        )

    @staticmethod
    async def _output(
        proc: asyncio.subprocess.Process, stdin: bytes | None
    ) -> tuple[tuple[bytes, int], tuple[bytes, int]]:
        """Feed ``stdin``, read stdout and stderr under their caps, wait for the exit."""
        assert proc.stdout is not None and proc.stderr is not None

        async def feed() -> None:
            if stdin is not None and proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(stdin)
                    await proc.stdin.drain()
                proc.stdin.close()

        _, out, err = await asyncio.gather(
            feed(),
            read_capped(proc.stdout.read, RUN_OUT_MAX),
            read_capped(proc.stderr.read, RUN_ERR_MAX),
        )
        await proc.wait()
        return out, err


@dataclass(frozen=True)
class CutOff:
    """A command whose caller stopped waiting, which ``finish_later`` runs on to its end. Its
    task's result is None when the command ended by itself, else why its session was killed."""

    session: int  # its ``sh``'s PID, which leads its session
    # Run through a client on this machine (a container's exec, Slurm's srun): the kill
    # reaches the client's session, not the script where the client runs it.
    wrapped: bool
    task: asyncio.Task[str | None]

    @property
    def running(self) -> bool:
        return not self.task.done()

    @property
    def _seen_over(self) -> bool:
        """Over, and its end seen (not cut short by the loop closing, nor failed itself)."""
        task = self.task
        return task.done() and not task.cancelled() and task.exception() is None

    @property
    def killed(self) -> str | None:
        """Why its session was killed, once it was; None while it runs, once it ended by
        itself, or when its end was not seen (the loop closed first)."""
        return self.task.result() if self._seen_over else None

    @property
    def ended_by_itself(self) -> bool:
        return self._seen_over and self.task.result() is None

    def when_over(self, said: Callable[[CutOff], None]) -> None:
        """Call ``said`` with this command once it is over (soon, when it already is)."""
        self.task.add_done_callback(lambda _task: said(self))


# The commands ``finish_later`` runs on, by their task: held here, since the loop keeps only
# weak references to its tasks.
_FINISHING: dict[asyncio.Task[str | None], CutOff] = {}

# The commands a caller has cut off (a control action): it sets a list here around its work,
# and ``finish_later`` adds to it the commands run in that task or in tasks started from it,
# which inherit the context. So each caller is told of its own commands only.
_CUT_OFF: ContextVar[list[CutOff] | None] = ContextVar("cut_off", default=None)


@contextlib.contextmanager
def cut_off_here() -> Iterator[list[CutOff]]:
    """The commands on this machine cut off within the block, as ``finish_later`` takes
    them on (in the block's task, or in tasks started in it)."""
    found: list[CutOff] = []
    token = _CUT_OFF.set(found)
    try:
        yield found
    finally:
        _CUT_OFF.reset(token)


def finish_later(proc: asyncio.subprocess.Process, deadline: float, wrapped: bool = False) -> None:
    """A command whose caller was cancelled (esc on a control action, the app quitting) runs
    on to its end: the control scripts are written to leave the run directory, a lock or a
    Slurm submission whole when they end, not to be killed at any line (a killed ``sbatch``
    could have queued a job nobody records). What the caller does next is not sent, since it
    was cancelled. While the loop runs the command is held to its own deadline, then its
    session is killed. Its output comes to this process: one still running when the process
    leaves ends at its next write (SIGPIPE), so the app waits for these first
    (``finish_pending``). ``wrapped``: run through a client (a container's exec, Slurm's
    srun), whose session is all that the kill reaches."""
    task = asyncio.get_running_loop().create_task(_finish(proc, deadline))
    command = CutOff(proc.pid, wrapped, task)
    _FINISHING[task] = command
    task.add_done_callback(lambda t: _FINISHING.pop(t, None))
    found = _CUT_OFF.get()
    if found is not None:
        found.append(command)


async def _finish(proc: asyncio.subprocess.Process, deadline: float) -> str | None:
    """None when the command ended by itself, else why its session was killed."""
    if proc.stdin is not None:
        proc.stdin.close()  # EOF after what was written: sh ends its script there
    streams = [s for s in (proc.stdout, proc.stderr) if s is not None]

    async def to_end() -> None:
        # A coroutine, not the gather itself: a cancelled wait_for would leave a bare
        # gather's result unread ("exception was never retrieved" at the loop's close).
        await asyncio.gather(*(read_capped(s.read, 0) for s in streams), proc.wait())

    try:
        await asyncio.wait_for(to_end(), max(deadline - time.monotonic(), 0.0))
    except asyncio.TimeoutError:  # not the builtin one before Python 3.11
        await end_session(proc)
        return "it ran past its deadline"
    except Exception as exc:  # its output could not be read: nothing would see it end
        await end_session(proc)
        return f"its output could not be read ({type(exc).__name__})"
    return None


def _held() -> list[CutOff]:
    loop = asyncio.get_running_loop()
    return [c for t, c in _FINISHING.items() if t.get_loop() is loop and not t.done()]


def finishing() -> list[int]:
    """The PIDs of the commands ``finish_later`` holds on this loop now."""
    return sorted(c.session for c in _held())


async def finish_pending(limit: float) -> list[int]:
    """Wait up to ``limit`` seconds for the commands ``finish_later`` holds on this loop; the
    PIDs of those that did not end by themselves: still running then, or killed meanwhile at
    their deadline."""
    held = _held()
    if held:
        await asyncio.wait([c.task for c in held], timeout=limit)
    return sorted(c.session for c in held if not c.ended_by_itself)
