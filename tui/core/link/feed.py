"""The feed: runs the probe through a transport and turns its lines into Snapshots.

One long-lived probe per host streams every periodic reading (GPUs, processes, run state, log
tails). When the stream breaks, the feed says so and starts it again with growing backoff; the
new probe resumes each log where the last sample left it (``--resume PATH=TOKEN``), so a
reconnect neither repeats lines already shown nor loses the ones written meanwhile.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.snapshot_delta import DeltaError, ProcTables
from dflash_tui.core.base.timings import SAMPLE_TIMEOUT_S
from dflash_tui.core.link.hostmap import HostPidMapper
from dflash_tui.core.link.local_probe import probe_args
from dflash_tui.core.link.transport import (
    Transport,
    TransportError,
    oversize_of,
    refused,
)
from dflash_tui.core.probe.bundle import probe_source


@dataclass(frozen=True)
class Disconnected:
    """The probe stream broke; ``retry_in`` seconds until the next attempt."""

    error: str
    retry_in: float


@dataclass(frozen=True)
class Malformed:
    """A probe line that could not be parsed (shown as a finding, never a crash)."""

    error: str
    lost_base: bool = False  # a process-table change list whose base this feed does not hold


FeedEvent = Snapshot | Disconnected | Malformed


def snapshot_of(make: Callable[[], Snapshot]) -> Snapshot | Malformed:
    """The sample ``make`` builds from a probe's output, or why that output is malformed."""
    try:
        return make()
    except ValueError as exc:
        return Malformed(str(exc))


def probe_command(
    python: str,
    host: HostConfig,
    *,
    once: bool = False,
    interval: float = 2.0,
    extra: Sequence[str] = (),
) -> str:
    """The sh command that runs the probe (source on stdin); every value quoted."""
    args = ["-", *probe_args(host, once=once, interval=interval, extra=extra)]
    return " ".join([python, *(shlex.quote(a) for a in args)])


async def sample_once(
    transport: Transport,
    host: HostConfig,
    timeout: float = SAMPLE_TIMEOUT_S,
    extra: Sequence[str] = (),
) -> Snapshot:
    """One sample of the machine; raises TransportError when the probe cannot run.

    Inside a container, GPU PIDs (host PIDs) are mapped to container PIDs from the host side.
    """
    res = await transport.run(
        probe_command(transport.python, host, once=True, extra=extra), probe_source(), timeout
    )
    if res.dropped:
        raise TransportError(refused(len(res.stdout.encode()) + res.dropped))
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    if not lines:
        err = res.stderr.strip()[-400:] or "no error text"
        raise TransportError(f"the probe printed nothing (exit {res.rc}): {err}")
    try:
        snap = Snapshot.from_json(lines[-1])
    except ValueError as exc:
        raise TransportError(f"the probe's output was not understood: {exc}") from None
    mapper = HostPidMapper.for_transport(transport, host.container)
    return await mapper.apply(snap) if mapper else snap


class Feed:
    """Yields Snapshots from a live probe; reconnects with backoff (1, 2, 4 ... 30 s).

    A probe that stops producing samples (a hung mount, a D-state process, a wedged
    container) is as good as gone: after ``stall_timeout`` without a line the stream is
    closed, which kills the probe, and the feed reports it and starts again.
    """

    def __init__(
        self,
        transport: Transport,
        host: HostConfig,
        interval: float = 2.0,
        max_backoff: float = 30.0,
        stall_timeout: float | None = None,
    ) -> None:
        self.transport = transport
        self.host = host
        self.interval = interval
        self.max_backoff = max_backoff
        self.stall_timeout = stall_timeout or max(5 * interval, 30.0)
        self.connected = False
        self.mapper = HostPidMapper.for_transport(transport, host.container)
        self.tables = ProcTables()  # the stream's last process table (snapshot_delta.py)
        self.resume: dict[str, str] = {}  # log path -> where its tail stopped (the probe's token)

    def stalled(self) -> str:
        """What a probe that sent nothing within the stall timeout is said to be."""
        return f"no sample for {self.stall_timeout:.0f}s: the probe is stuck"

    def resume_args(self) -> list[str]:
        """``--resume=PATH=TOKEN`` for every log a previous probe tailed."""
        return [f"--resume={path}={token}" for path, token in self.resume.items()]

    def _keep_resume(self, snap: Snapshot) -> None:
        # Only the logs of the latest sample: an earlier run's log is not tailed again.
        self.resume = {
            log.path: tok
            for log in snap.logs
            if (tok := log.resume or self.resume.get(log.path)) is not None
        }

    async def events(self) -> AsyncGenerator[FeedEvent, None]:
        backoff = 1.0
        delta = True  # off for good once a restart for a lost line brought no sample either
        while True:
            # Each line's process table only as it changed (RowDelta): a stream's own tables.
            extra = [*(["--delta"] if delta else []), *self.resume_args()]
            cmd = probe_command(
                self.transport.python, self.host, interval=self.interval, extra=extra
            )
            stream, self.tables = self.transport.stream(cmd, probe_source()), ProcTables()
            restart, sampled = False, False
            try:
                error = "the probe stopped"
                while True:
                    try:
                        line = await asyncio.wait_for(anext(stream), self.stall_timeout)
                    except StopAsyncIteration:
                        break
                    event = await self._parse(line)
                    if event is not None:
                        if isinstance(event, Snapshot):
                            self.connected, backoff, sampled = True, 1.0, True
                            self._keep_resume(event)
                        yield event
                    if isinstance(event, Malformed) and event.lost_base:
                        # A new probe sends a whole table at once (and resumes the logs where
                        # the last sample left them), sooner than this one's next whole table.
                        # The link is up: no Disconnected, no backoff. A probe whose whole
                        # tables never arrive (each over the line cap) would be restarted at
                        # every line: it goes on with whole tables only, as without --delta.
                        restart, delta = True, delta and sampled
                        break
            except asyncio.TimeoutError:
                error = self.stalled()
            except TransportError as exc:
                error = str(exc)
            except OSError as exc:
                error = f"{type(exc).__name__}: {exc}"
            finally:  # every transport's stream is an async generator: closing it ends the probe
                if isinstance(stream, AsyncGenerator):
                    await stream.aclose()
            if restart:
                continue
            self.connected = False
            yield Disconnected(error, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    async def _parse(self, line: str) -> FeedEvent | None:
        if not line.strip():
            return None
        if (size := oversize_of(line)) is not None:
            return Malformed(refused(size))
        try:
            snap = Snapshot.from_json(line, self.tables)
        except DeltaError as exc:
            return Malformed(str(exc), lost_base=True)
        except ValueError as exc:
            return Malformed(str(exc))
        if self.mapper is None:
            return snap
        return await self.mapper.apply(snap)
