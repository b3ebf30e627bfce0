"""Many hosts at once: every host's work runs concurrently, a bounded number opening at a time.

A host's connection and first sample (an SSH handshake, a probe's interpreter starting) are
the costly part of reaching it; done one host after another, 64 hosts take 64 times one host's
latency, and a host that does not answer holds up every host after it. Here each host is its
own task: a slow or unreachable host costs the others nothing beyond the slot it holds until
its own timeout (the transport's connect timeout, the sample's timeout) gives it up.

The bound keeps a large allocation from opening hundreds of connections and starting hundreds
of probes in the same instant (file descriptors: 1024 by default per process). The SSH
handshakes themselves have a tighter bound of their own (ssh_connect.MAX_HANDSHAKES), for the
sshd of a shared bastion or login node.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_OPENING = 32  # hosts connecting (and taking their first sample) at the same time


async def each_host(
    items: Iterable[T], work: Callable[[T], Awaitable[R]], limit: int = MAX_OPENING
) -> list[R]:
    """``work(item)`` for every item, at most ``limit`` at once; results in the items' order."""
    slots = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with slots:
            return await work(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def opened_under(slots: asyncio.Semaphore, events: AsyncIterator[T]) -> AsyncIterator[T]:
    """``events``, holding one of ``slots`` until the first has come (the host connected and
    sampled, or said why not); a live stream then runs without a slot. Closing this closes
    ``events`` (a feed's stream ends its probe when closed)."""
    try:
        async with slots:
            try:
                first = await anext(events)
            except StopAsyncIteration:
                return
        yield first
        async for event in events:
            yield event
    finally:
        if isinstance(events, AsyncGenerator):
            await events.aclose()
