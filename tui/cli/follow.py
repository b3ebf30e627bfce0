"""One host followed sample by sample, for ``status --watch`` and ``wait``: its status
document at every sample of its live feed, and an exception while sampling it is that host's
own ``unreachable`` document, not the command's end: the host is followed again after a
growing pause (1, 2, 4 ... 30 s) while the other hosts go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from dflash_tui.cli.status_doc import status_doc, unreachable
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.fanout import opened_under
from dflash_tui.core.link.feed import Disconnected, Feed, FeedEvent
from dflash_tui.core.link.local_feed import feed_for
from dflash_tui.core.link.transport import Transport

if TYPE_CHECKING:  # the Slurm modules load only for a Slurm host
    from dflash_tui.core.control.slurm.findings import KeptView

FAILURE_CAP = 300  # characters of an exception's text in a host's line
SAMPLING_FAILED = "sampling failed: "
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 30.0  # pauses before a failed host is followed again
# Given each document of a host with the feed it came through (its transport, its stall
# timeout); True when it needs no more.
Take = Callable[[Feed, dict[str, Any]], Awaitable[bool]]


async def host_documents(
    host: HostConfig, transport: Transport, events: AsyncIterator[FeedEvent]
) -> AsyncIterator[dict[str, Any]]:
    """The host's status document at every sample of its live feed's ``events``, and an
    unreachable host's document whenever the feed loses it (the feed reconnects by itself).
    Under Slurm the run is its job, as Slurm says it, through the same transport (the login
    node), read again at most every ``SLURM_REFRESH_S`` (tui/core/control/slurm/findings.py)."""
    tracker = Tracker(host.topology, thresholds_for(host))
    kept = kept_view(host, transport)
    async for ev in events:
        if isinstance(ev, Snapshot):
            view = await kept.read() if kept is not None else None
            yield status_doc(host, tracker, ev, view)[0]
        elif isinstance(ev, Disconnected):
            yield unreachable(host, ev.error)


def kept_view(host: HostConfig, transport: Transport) -> KeptView | None:
    """Slurm's kept word on a Slurm host's run; None for a direct host (the Slurm modules
    are imported only for a Slurm host)."""
    if host.scheduler != "slurm":
        return None
    from dflash_tui.core.control.slurm.findings import KeptView

    return KeptView(transport, host)


def failure_text(exc: Exception) -> str:
    """One host's sampling that raised, in one line (the host is named by ``unreachable``;
    whoever prints it makes it terminal-safe); capped, as any hostile text."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{SAMPLING_FAILED}{text[:FAILURE_CAP]}"


async def _connection(
    host: HostConfig, interval: float, opening: asyncio.Semaphore, take: Take
) -> bool:
    """One connection's documents of ``host`` given to ``take``, then the unreachable
    document that says why they ended; True when ``take`` needs no more. Making the
    transport and the feed does no I/O: what fails, fails in the documents' loop."""
    transport = make_transport(host)
    feed = feed_for(transport, host, interval)
    try:
        try:
            # its connection and first sample wait for one of ``opening``'s slots
            # (core/link/fanout.py): every host opens concurrently, a bounded number at a time
            events = opened_under(opening, feed.events())
            async for doc in host_documents(host, transport, events):
                if await take(feed, doc):
                    return True
            why = "its feed ended"
        except BrokenPipeError:  # the reader left (`status --watch | head`): the command ends
            raise
        except Exception as exc:  # one host's failure is its own document, not the end
            why = failure_text(exc)
        return await take(feed, unreachable(host, why))
    finally:
        await transport.close()


async def follow_host(
    host: HostConfig, interval: float, opening: asyncio.Semaphore, take: Take
) -> None:
    """Every document of ``host`` given to ``take`` until it returns True: whatever ends a
    connection's documents (an exception while sampling, the feed ending) is the host's
    ``unreachable: HOST: why`` document, and the host is followed again after a pause that
    doubles up to ``RETRY_MAX_S`` and starts again at ``RETRY_FIRST_S`` once it answers."""
    pause = [RETRY_FIRST_S]

    async def taken(feed: Feed, doc: dict[str, Any]) -> bool:
        if "error" not in doc:
            pause[0] = RETRY_FIRST_S
        return await take(feed, doc)

    while not await _connection(host, interval, opening, taken):
        await asyncio.sleep(pause[0])
        pause[0] = min(pause[0] * 2, RETRY_MAX_S)
