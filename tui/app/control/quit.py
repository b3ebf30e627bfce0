"""What quitting does to the workers that change things (actions, auto-restarts): each is given
``STOP_WAIT`` to end, then cancelled and given as long again, since a cancelled worker may
still be cleaning up (a launch giving its lock back)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from textual.worker import Worker

STOP_WAIT = 2.0  # seconds quit gives a worker to end, and again once cancelled


async def end_workers(workers: Sequence[Worker[Any]]) -> None:
    """Wait up to ``STOP_WAIT`` for ``workers`` to end; cancel those still running (again,
    for one already cancelled: the command of its cleanup then finishes through
    tui/core/link/transport.py ``finish_later``) and wait up to ``STOP_WAIT`` more."""
    waits = [asyncio.ensure_future(w.wait()) for w in workers]
    if not waits:
        return
    await asyncio.wait(waits, timeout=STOP_WAIT)
    late = [w for w in workers if w.is_running]
    for w in late:
        w.cancel()
    if late:
        await asyncio.wait(waits, timeout=STOP_WAIT)
    for t in waits:
        t.cancel()
    # Each wait's WorkerCancelled collected: asyncio logs no "never retrieved" on the way out.
    await asyncio.gather(*waits, return_exceptions=True)
