"""The app's process loads no more than it uses (issue 16, RSS): asyncio without its TLS
support (tui/cli/lean.py), plotext only once the History tab is opened, urllib and http.client
only for a webhook. Each case runs in a fresh interpreter, as the app's command does."""

from __future__ import annotations

import json
import subprocess
import sys

RUN = r"""
import json, sys
from dflash_tui.cli.lean import asyncio_without_tls
asyncio_without_tls()
import asyncio, asyncio.base_events, asyncio.sslproto
from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config import Config

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
out["loop_tls"] = [asyncio.base_events.ssl is not None, asyncio.sslproto.ssl is not None]
import ssl  # importable again for whoever needs it (an https webhook)
out["ssl_later"] = hasattr(ssl, "create_default_context")
print(json.dumps(out))
"""


def test_the_app_loads_neither_tls_nor_plotext_nor_urllib_until_used() -> None:
    res = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    before, after = set(out["before"]), set(out["after"])
    assert "dflash_tui.app.host.pane" in before  # the list is the running app's
    for name in ("ssl", "_ssl", "plotext", "textual_plotext", "http.client", "urllib.request"):
        assert name not in before, name
    assert out["loop_tls"] == [False, False] and out["ssl_later"]
    # Opening the History tab brings plotext, and its five plots are drawn.
    assert {"plotext", "textual_plotext"} <= after
    assert out["plots"] == [True] * 5


def test_tls_is_left_alone_once_anything_imported_it() -> None:
    code = (
        "import ssl, sys\n"
        "from dflash_tui.cli.lean import asyncio_without_tls\n"
        "asyncio_without_tls()\n"
        "import asyncio.base_events as b\n"
        "print(b.ssl is ssl)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "True", res.stderr
