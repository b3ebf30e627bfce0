"""The History tab (tui/app/history/): `e` reaches it, its keys work (and show) only while it
is shown, `z` and `<`/`>` change the plotted span, and the plots draw the whole run's steps."""

from __future__ import annotations

from rich.text import Text
from support import until
from textual.pilot import Pilot
from textual_plotext import PlotextPlot

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.history.view import HistoryView
from dflash_tui.app.screens import HelpScreen
from dflash_tui.app.source import ScriptedSource
from dflash_tui.core.base.config import Config

SIZE = (120, 40)
SPAN_MIN = 80.0  # the scene: an hour of steps before the app attached, then 20 minutes


def x_ticks(plot: PlotextPlot) -> list[str]:
    """The numbers on the plot's x axis, as drawn (the line under the frame's bottom)."""
    rows = Text.from_ansi(plot.plt.build()).plain.splitlines()
    bottom = next(i for i, r in enumerate(rows) if "└" in r)
    return rows[bottom + 1].split()


def footer_actions(app: DflashApp) -> set[str]:
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}


async def on_history(pilot: Pilot, app: DflashApp) -> HistoryView:
    await until(pilot, lambda: app.samples >= 41, timeout=90)
    await pilot.pause(0.2)
    view = app.detail().history()
    assert view.bounds() is not None
    whole = view.bounds()
    await pilot.press("z", "less_than_sign")  # the tab is not shown: the keys do nothing
    assert view.bounds() == whole and not app.history_shown()
    assert "app.history_zoom" not in footer_actions(app)
    await pilot.press("e", "e")
    await pilot.pause(0.2)
    assert app.history_shown() and "app.history_zoom" in footer_actions(app)
    assert view.shown  # so new samples are plotted now
    return view


async def test_zoom_and_pan_keys_change_the_plotted_span() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=SIZE) as pilot:
        view = await on_history(pilot, app)
        loss = view.query_one("#plot-loss", PlotextPlot)
        lo, hi = view.bounds()  # type: ignore[misc]
        assert round((hi - lo) / 60) == SPAN_MIN  # the whole run: the hour before the samples
        assert x_ticks(loss)[0] == "0" and x_ticks(loss)[-1] == "80"
        await pilot.press("z")  # last hour
        lo, hi = view.bounds()  # type: ignore[misc]
        assert hi - lo == 3600.0 and x_ticks(loss)[0] == "20" and x_ticks(loss)[-1] == "80"
        await pilot.press("less_than_sign")  # half an hour back
        assert x_ticks(loss)[0] == "0" and x_ticks(loss)[-1] == "60"  # clamped at the start
        await pilot.press("less_than_sign")  # already at the start: stays
        assert x_ticks(loss)[0] == "0"
        await pilot.press("greater_than_sign")
        assert x_ticks(loss)[0] == "20"
        await pilot.press("z")  # last 5 minutes
        lo, hi = view.bounds()  # type: ignore[misc]
        assert hi - lo == 300.0 and float(x_ticks(loss)[0]) >= 75
        await pilot.press("z")  # back to the whole run
        assert x_ticks(loss)[-1] == "80"


async def test_history_keys_are_in_the_help_only_with_the_tab() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=SIZE) as pilot:
        await on_history(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        assert any(k == "z" for k, _ in app.screen.keys)
        await pilot.press("escape", "e")  # back to the process tree
        await pilot.pause(0.1)
        assert not app.history_shown() and "app.history_zoom" not in footer_actions(app)
        assert not app.detail().history().shown  # hidden: samples are kept, not plotted
