"""What the start screen does not show is not made at start: the later tabs' views, the log
filter's and search's boxes, the compact GPU lines, the wait bar's parts. Each costs resident
memory (a widget is a message pump with its styles and caches) and most sessions never see
them. Each is made when first asked for, and then works: the keys in it act on it."""

from __future__ import annotations

from support import until
from textual.widgets import DataTable, Input, ProgressBar

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.findings.panel import TimelineList
from dflash_tui.app.host.gpus.compact import GpuLine
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.config_types import Config

SIZE = (120, 40)
# The start screen of one host with 8 GPUs: 49 widgets (74 when everything was made at
# start). A few more is a new widget; past this bound something deferred is made again.
START_WIDGETS = 55


async def test_the_start_screen_makes_only_what_it_shows() -> None:
    snaps = scenes.gpu_processes()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.pause(0.3)
        pane = app.detail()
        assert len(pane.grid().panels) == 8
        count = len(list(app.screen.walk_children()))
        assert count <= START_WIDGETS, count
        for kind in (TimelineList, DataTable, Input, GpuLine, ProgressBar):
            assert not app.screen.query(kind), kind
        for tab in ("tab-timeline", "tab-history", "tab-gpuprocs"):
            assert not pane.tabs().get_pane(tab).children, tab

        await pilot.press("slash")  # the log filter's box, made and focused
        await pilot.pause(0.1)
        box = app.screen.query_one("#log-filter", Input)
        assert box.has_focus and box.value == pane.logs().filter_text
        await pilot.press("escape")
        await pilot.press("e")  # the Timeline: its list, with the events kept so far
        await pilot.pause(0.1)
        assert pane.query_one(TimelineList).drawn is pane.store.events
        await pilot.press("p")  # the GPU table, filled from the latest sample
        view = pane.gpu_procs()
        await until(pilot, lambda: view.table.row_count == len(view.rows) > 0)
        rows = view.table.row_count
        await pilot.press("slash", "o", "r", "p", "h", "a", "n", "enter")  # its filter box
        await until(pilot, lambda: 0 < view.table.row_count < rows)
        assert {r.owner for r in view.shown} == {"orphan"}
        await pilot.press("escape", "c")  # one line per GPU: eight lines made
        await pilot.pause(0.1)
        assert len(app.screen.query(GpuLine)) == 8 and pane.grid().compact
        wait = app.screen.query_one(WaitBar)
        wait.start("stopping the run")
        await until(pilot, lambda: bool(wait.query(ProgressBar)))
        count_after = len(list(app.screen.walk_children()))
        assert count_after > count + 15  # what was left out, made on demand
