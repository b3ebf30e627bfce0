"""core/link/fanout.py: hosts' work at once, at most a bound of them opening at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from dflash_tui.core.link.fanout import each_host, opened_under


async def test_each_host_runs_at_most_the_limit_at_once_in_order() -> None:
    running, most = 0, 0

    async def work(i: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01 * (5 - i))  # later items finish first
        running -= 1
        return i * 10

    assert await each_host(range(5), work, limit=2) == [0, 10, 20, 30, 40]
    assert most == 2


async def test_opened_under_holds_a_slot_until_the_first_event_only() -> None:
    slots = asyncio.Semaphore(1)
    first = asyncio.Event()
    closed: list[str] = []

    async def events(name: str) -> AsyncGenerator[str, None]:
        try:
            await first.wait()
            yield f"{name} 1"
            yield f"{name} 2"
            await asyncio.sleep(3600)  # a live stream: never ends by itself
        finally:
            closed.append(name)

    a, b = opened_under(slots, events("a")), opened_under(slots, events("b"))
    waiting_b = asyncio.ensure_future(anext(b))
    first.set()
    assert await anext(a) == "a 1"  # a had the slot; its first event gave it back
    assert await asyncio.wait_for(waiting_b, 1) == "b 1"
    assert await anext(a) == "a 2"  # a streams on without a slot
    await a.aclose()
    await b.aclose()
    assert sorted(closed) == ["a", "b"]  # closing the wrapper ends the feed's stream
