"""The app's process loads no more than it uses: plotext only once the History tab is opened,
urllib and http.client only for a webhook. It runs in a fresh interpreter, as the app's command
does."""

from __future__ import annotations

import json
import subprocess
import sys

RUN = r"""
import json, sys
import asyncio
from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config

out = {}

async def main():
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 5:
            await pilot.pause(0.05)
        out["before"] = sorted(sys.modules)
        await pilot.press("e", "e")
        view = app.detail().history()
        await pilot.pause(0.1)
        while view.building:
            await pilot.pause(0.05)
        out["plots"] = [p.text is not None for p in view.query("HistoryPlot")]
        out["after"] = sorted(sys.modules)

asyncio.run(main())
print(json.dumps(out))
"""


def test_the_app_loads_neither_plotext_nor_urllib_until_used() -> None:
    res = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    before, after = set(out["before"]), set(out["after"])
    assert "dflash_tui.app.host.pane" in before  # the list is the running app's
    for name in ("plotext", "textual_plotext", "http.client", "urllib.request"):
        assert name not in before, name
    # Opening the History tab brings plotext, and its five plots are drawn.
    assert {"plotext", "textual_plotext"} <= after
    assert out["plots"] == [True] * 5
