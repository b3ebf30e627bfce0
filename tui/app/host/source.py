"""Where samples come from: a live probe through a transport, or a script (tests, replays).

The app consumes any ``EventSource``; tests hand it a ScriptedSource of fixed snapshots, so
screens are deterministic (no clock, no PIDs that vary).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Protocol

from dflash_tui.app.host.no_job import NoJob
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.timings import SAMPLE_TIMEOUT_S
from dflash_tui.core.link.feed import Disconnected, Feed, FeedEvent, Malformed, sample_once
from dflash_tui.core.link.local_feed import LocalFeed, Stuck, feed_for, in_daemon_thread
from dflash_tui.core.link.local_probe import failed, one_sample, probe_args, stuck
from dflash_tui.core.link.refresh import between
from dflash_tui.core.link.transport import CommandResult, Transport, TransportError

__all__ = ["Disconnected", "EventSource", "LiveSource", "Malformed", "ScriptedSource", "probe_feed"]


class EventSource(Protocol):
    def events(self) -> AsyncIterator[FeedEvent | NoJob]: ...

    async def close(self) -> None: ...


class _ExecStream(Transport):
    """Runs the probe as the stream's own process (``exec``), not as a child of ``sh -c``.

    Cancelling the stream kills the process it started; were that a shell, the probe would
    live on holding the pipe, and the cancelled stream would wait on it for ever.
    """

    def __init__(self, inner: Transport) -> None:
        super().__init__()
        self.inner, self.label, self.python = inner, inner.label, inner.python

    def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        return self.inner.stream(f"exec {cmd}", stdin)

    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        return await self.inner.run(cmd, stdin, timeout)

    @property
    def connected(self) -> bool:
        return self.inner.connected


def probe_feed(transport: Transport, host: HostConfig, interval: float) -> Feed:
    """The probe as a process through ``transport`` whatever ``host`` says (a node of a Slurm
    job is reached through its transport alone, never sampled inside this process)."""
    return Feed(_ExecStream(transport), host, interval)


class LiveSource:
    """The probe streaming from the host: a probe process through the transport (the same
    code path for this machine and a remote one), or, on this machine outside a container,
    the probe inside this process (core/link/local_feed.py; no second interpreter)."""

    def __init__(self, transport: Transport, host: HostConfig, interval: float) -> None:
        self.transport = transport
        self.feed = feed_for(_ExecStream(transport), host, interval)

    def events(self) -> AsyncIterator[FeedEvent]:
        return self.feed.events()

    async def sample_now(self, last: Snapshot | None) -> Snapshot:
        """One sample at once (the refresh key), through the same transport (one SSH
        connection), fitted in between the stream's (core/link/refresh.py). Its logs resume
        where the stream's stopped: the probe reads no more of them than it must."""
        host, extra = self.feed.host, self.feed.resume_args()
        if self.local:
            fresh = await self._sample_here(probe_args(host, once=True, extra=extra))
        else:
            fresh = await sample_once(self.transport, host, extra=extra)
        return between(fresh, last)

    @property
    def local(self) -> bool:
        """Samples are taken inside this process (not after a hung one handed over)."""
        return isinstance(self.feed, LocalFeed) and not self.feed.handed_over

    async def _sample_here(self, argv: list[str]) -> Snapshot:
        """A one-shot sample inside this process; its failures as the subprocess's."""
        timeout = SAMPLE_TIMEOUT_S
        try:
            return Snapshot.from_dict(await in_daemon_thread(lambda: one_sample(argv), timeout))
        except Stuck:
            raise stuck(timeout) from None
        except Exception as exc:
            raise TransportError(failed(exc)) from exc

    async def close(self) -> None:
        await self.transport.close()


class ScriptedSource:
    """Yields the given events (``delay`` apart), then whatever is ``push``ed, forever."""

    def __init__(self, events: Iterable[FeedEvent] = (), delay: float = 0.0) -> None:
        self.queue: asyncio.Queue[FeedEvent] | None = None
        self.initial = list(events)
        self.delay = delay
        self.sent = 0

    def push(self, event: FeedEvent) -> None:
        self._queue().put_nowait(event)

    def _queue(self) -> asyncio.Queue[FeedEvent]:
        if self.queue is None:
            self.queue = asyncio.Queue()
            for ev in self.initial:
                self.queue.put_nowait(ev)
        return self.queue

    async def events(self) -> AsyncIterator[FeedEvent]:
        q = self._queue()
        while True:
            ev = await q.get()
            self.sent += 1
            yield ev
            if self.delay:
                await asyncio.sleep(self.delay)

    async def close(self) -> None:
        pass
