"""SshTransport: the Transport interface over one persistent asyncssh connection per host.

The connection opens lazily on the first command and is shared by ``stream`` (the probe: one
long-lived channel, its source written to stdin then EOF) and ``run`` (control: one short
channel per command). At most ``max_channels`` channels are open at once (OpenSSH's
MaxSessions is 10). Keepalives notice a dead link; any failure of the link or a channel
raises TransportError, the feed shows the host disconnected and retries with backoff, and the
next command connects again. Jobs never depend on the channel: the launcher detaches them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import replace

from dflash_tui.core.link.ssh_connect import SshSettings, open_connection, parse_address
from dflash_tui.core.link.sshlib import asyncssh
from dflash_tui.core.link.transport import (
    RUN_ERR_MAX,
    RUN_OUT_MAX,
    CommandResult,
    Transport,
    TransportError,
    Wrap,
    read_capped,
    read_lines,
)
from dflash_tui.core.probe.loader import launcher

STDERR_KEEP = 4000  # bytes of a channel's stderr kept for the error message


class SshLink:
    """One host's connection (plus its ProxyJump hops) and the channel budget on it."""

    def __init__(self, address: str, settings: SshSettings) -> None:
        parse_address(address)  # refuse a malformed address before any network use
        self.address, self.settings = address, settings
        self._conn: asyncssh.SSHClientConnection | None = None
        self._jumps: list[asyncssh.SSHClientConnection] = []
        self._lock = asyncio.Lock()
        self.channels = asyncio.Semaphore(settings.max_channels)
        self.connects = 0  # how many times a connection was opened (tests, diagnostics)

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def connection(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            self._drop()
            self._conn, self._jumps = await open_connection(self.address, self.settings)
            self.connects += 1
            return self._conn

    def _drop(self) -> None:
        for conn in [self._conn, *reversed(self._jumps)]:
            if conn is not None:
                conn.close()
        self._conn, self._jumps = None, []

    async def close(self) -> None:
        conns = [c for c in [self._conn, *self._jumps] if c is not None]
        self._drop()
        for conn in conns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)


def _exit_code(proc: asyncssh.SSHClientProcess[bytes]) -> int | None:
    """The exit status, 128+N for a signal, None when the channel ended without either."""
    if proc.exit_status is not None and proc.exit_status >= 0:
        return proc.exit_status
    if proc.exit_signal:
        name = str(proc.exit_signal[0])
        sig = getattr(signal, f"SIG{name}", None)
        return 128 + (int(sig) if sig is not None else 0)
    return None


def _describe(exc: BaseException, label: str) -> str:
    if isinstance(exc, asyncssh.ConnectionLost):
        return f"ssh {label}: connection lost ({exc.reason or 'no reason given'})"
    if isinstance(exc, asyncssh.ChannelOpenError):
        return f"ssh {label}: could not open a channel: {exc.reason}"
    if isinstance(exc, asyncssh.Error):
        return f"ssh {label}: {exc.reason}"
    if isinstance(exc, OSError):
        return f"ssh {label}: {exc.strerror or exc}"
    return f"ssh {label}: {type(exc).__name__}: {exc}"


async def _drain(reader: asyncssh.SSHReader[bytes], keep: bytearray) -> None:
    """Read a stream to its end keeping only its tail (stderr must not stall the channel)."""
    with contextlib.suppress(asyncssh.Error, OSError):
        while chunk := await reader.read(65536):
            keep += chunk
            del keep[:-STDERR_KEEP]


class SshTransport(Transport):
    """A remote machine over SSH; ``address`` is an ssh-config alias or [user@]host[:port]."""

    def __init__(
        self,
        address: str,
        wrap: Wrap | None = None,
        *,
        accept_new: bool = False,
        settings: SshSettings | None = None,
        link: SshLink | None = None,
    ) -> None:
        super().__init__(wrap)
        settings = replace(settings or SshSettings(), accept_new=accept_new)
        self.link = link or SshLink(address, settings)
        self.label = address
        # python3 where there is one, else the shell probe (decided on the remote side).
        self.python = launcher()

    @property
    def connected(self) -> bool:
        return self.link.connected

    def host_side(self) -> SshTransport:
        """The same connection without the container wrapper (commands run on the host)."""
        return SshTransport(self.link.address, None, link=self.link)

    async def close(self) -> None:
        await self.link.close()

    async def _open(self, cmd: str) -> asyncssh.SSHClientProcess[bytes]:
        conn = await self.link.connection()
        try:
            return await conn.create_process(self.wrap(cmd), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise TransportError(_describe(exc, self.label)) from None

    async def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        async with self.link.channels:
            proc = await self._open(cmd)
            err = bytearray()
            errors = asyncio.ensure_future(_drain(proc.stderr, err))
            try:
                if stdin is not None:
                    proc.stdin.write(stdin)
                proc.stdin.write_eof()
                async for line in read_lines(proc.stdout.read):
                    yield line
                await proc.wait_closed()
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(_describe(exc, self.label)) from None
            finally:
                proc.close()
                errors.cancel()
            code = _exit_code(proc)
            if code is None:
                raise TransportError(f"ssh {self.label}: the channel closed without an exit status")
            if code:
                text = err.decode("utf-8", "replace").strip()[-500:] or "no error text"
                raise TransportError(f"probe exited with {code}: {text}")

    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        try:
            return await asyncio.wait_for(self._run(cmd, stdin), timeout)
        except asyncio.TimeoutError:
            raise TransportError(
                f"ssh {self.label}: command timed out after {timeout:.0f}s"
            ) from None

    async def _run(self, cmd: str, stdin: bytes | None) -> CommandResult:
        async with self.link.channels:
            proc = await self._open(cmd)
            try:
                if stdin is not None:
                    proc.stdin.write(stdin)
                proc.stdin.write_eof()
                (out, dropped), (err, _) = await asyncio.gather(
                    read_capped(proc.stdout.read, RUN_OUT_MAX),
                    read_capped(proc.stderr.read, RUN_ERR_MAX),
                )
                await proc.wait_closed()
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(_describe(exc, self.label)) from None
            finally:
                proc.close()
        code = _exit_code(proc)
        if code is None:
            raise TransportError(f"ssh {self.label}: the channel closed without an exit status")
        return CommandResult(
            code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), dropped
        )
