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
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from dflash_tui.core.link.errors import TransportError as TransportError  # its callers' name

Wrap = Callable[[str], str]


@dataclass(frozen=True)
class CommandResult:
    rc: int
    stdout: str
    stderr: str

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


def _kill_session(pid: int) -> None:
    """Kill the whole session we started (sh and the probe under it), by its own PGID.

    Killing only ``sh`` would leave the probe holding the pipe, and ``wait`` would never end.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


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
            limit=64 * 1024 * 1024,  # one probe line carries log tails; allow large lines
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
            async for raw in proc.stdout:
                yield raw.decode("utf-8", "replace").rstrip("\n")
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
                _kill_session(proc.pid)
                await proc.wait()

    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        proc = await self._spawn(cmd, stdin)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except asyncio.TimeoutError:
            _kill_session(proc.pid)
            await proc.wait()
            raise TransportError(f"command timed out after {timeout:.0f}s") from None
        return CommandResult(
            proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        )
