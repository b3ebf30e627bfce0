"""Start-up's objects are frozen out of the collector's full passes once the screen is up, and
handed back when the app leaves (tui/app/heap.py)."""

from __future__ import annotations

import gc

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config import Config
from dflash_tui.core.base.snapshot import Snapshot


async def test_start_up_frozen_while_running_and_released_after() -> None:
    source = ScriptedSource([Snapshot.from_dict({"time": 0.0, "telemetry": {"source": "none"}})])
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 1:
            await pilot.pause(0.01)
        await pilot.pause()
        assert gc.get_freeze_count() > 10_000  # the app's DOM and modules, not a handful
    assert gc.get_freeze_count() == 0
