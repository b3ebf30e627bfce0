"""Helpers shared by the Pilot tests (tests/ is on sys.path through tests/conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def until(pilot: Pilot, cond: Callable[[], bool], timeout: float = 20.0) -> None:
    """Let the app run until ``cond()`` holds; fail the test after ``timeout`` seconds."""
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)
