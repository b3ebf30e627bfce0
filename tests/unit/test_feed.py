"""The feed: a stuck probe is reported and restarted, never a silent freeze."""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import Disconnected, Feed
from dflash_tui.core.link.transport import LocalTransport

# A bound for what takes well under a second on an idle machine: a 10 s bound ended in a
# TimeoutError on a loaded 2-core machine (other test runs beside this one).
WAIT_S = 60


async def test_a_stuck_probe_becomes_disconnected_then_retried(tmp_path: Path) -> None:
    # Stands where python3 would: reads the probe source, prints one sample, then hangs.
    stuck = tmp_path / "stuck probe.sh"
    stuck.write_text("cat >/dev/null\necho '{\"time\": 5}'\nexec sleep 60\n")
    transport = LocalTransport(python=f"sh {shlex.quote(str(stuck))}")
    feed = Feed(transport, HostConfig(), interval=0.1, stall_timeout=0.8)
    events = feed.events()
    try:
        first = await asyncio.wait_for(anext(events), WAIT_S)
        assert isinstance(first, Snapshot) and first.time == 5 and feed.connected
        t0 = time.monotonic()
        second = await asyncio.wait_for(anext(events), WAIT_S)
        assert isinstance(second, Disconnected) and "no sample for" in second.error
        # Reported once the stall timeout (0.8 s) passed: not before, not a freeze.
        assert 0.5 < time.monotonic() - t0 < WAIT_S and not feed.connected
        third = await asyncio.wait_for(anext(events), WAIT_S)  # started again after the backoff
        assert isinstance(third, Snapshot)
    finally:
        await events.aclose()
