"""The History tab (tui/app/host/history/): `e` reaches it, its keys work (and show) only while it
is shown, `z` and `<`/`>` change the plotted span, and the plots draw the whole run's steps,
which reach it from a real run's event stream through the real probe."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest
from support import until
from textual.pilot import Pilot
from textual.widgets import Static

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.history.plot import HistoryPlot
from dflash_tui.app.host.history.view import HistoryView, build
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
SPAN_MIN = 80.0  # the scene: an hour of steps before the app attached, then 20 minutes


def x_ticks(plot: HistoryPlot) -> list[str]:
    """The numbers on the plot's x axis, as drawn (the line under the frame's bottom)."""
    assert plot.text is not None
    rows = plot.text.plain.splitlines()
    bottom = next(i for i, r in enumerate(rows) if "└" in r)
    return rows[bottom + 1].split()


def test_a_plot_wider_and_taller_than_the_terminal_plotext_read_keeps_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Served in a browser, the terminal size plotext reads (COLUMNS/LINES, the browser's at
    start) can be smaller than the widget: the plot is built at the widget's size anyway."""
    from textual_plotext.plot import Plot

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    plt = Plot()
    plt.plot([0.0, 1.0, 2.0], [1.0, 2.0, 4.0])
    (text,) = build([(cast(HistoryPlot, None), plt, (100, 30), "clear")])
    rows = text.plain.splitlines()
    assert (max(map(len, rows)), len(rows)) == (100, 30)


def footer_actions(app: DflashApp) -> set[str]:
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}


async def built(pilot: Pilot, view: HistoryView) -> None:
    """Until the plots' build (a thread worker) has been shown."""
    await pilot.pause(0.1)
    await until(pilot, lambda: view.building == 0, timeout=60)


async def press(pilot: Pilot, view: HistoryView, key: str) -> None:
    await pilot.press(key)
    await built(pilot, view)


async def on_history(pilot: Pilot, app: DflashApp) -> HistoryView:
    await until(pilot, lambda: app.samples >= 41, timeout=90)
    await pilot.pause(0.2)
    assert app.detail().store.history.span() is not None
    await pilot.press("z", "less_than_sign")  # the tab is not shown: the keys do nothing
    assert not app.history_shown() and "app.history_zoom" not in footer_actions(app)
    assert not app.detail().query(HistoryView)  # made when its tab is first shown
    await pilot.press("e", "e")
    view = app.detail().history()
    await built(pilot, view)
    assert view.bounds() == view.view.bounds(app.detail().store.history.span())
    assert app.history_shown() and "app.history_zoom" in footer_actions(app)
    assert view.shown  # so new samples are plotted now
    return view


async def test_zoom_and_pan_keys_change_the_plotted_span() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=SIZE) as pilot:
        view = await on_history(pilot, app)
        loss = view.query_one("#plot-loss", HistoryPlot)
        lo, hi = view.bounds()  # type: ignore[misc]
        assert round((hi - lo) / 60) == SPAN_MIN  # the whole run: the hour before the samples
        assert x_ticks(loss)[0] == "0" and x_ticks(loss)[-1] == "80"
        await press(pilot, view, "z")  # last hour
        lo, hi = view.bounds()  # type: ignore[misc]
        assert hi - lo == 3600.0 and x_ticks(loss)[0] == "20" and x_ticks(loss)[-1] == "80"
        await press(pilot, view, "less_than_sign")  # half an hour back
        assert x_ticks(loss)[0] == "0" and x_ticks(loss)[-1] == "60"  # clamped at the start
        await press(pilot, view, "less_than_sign")  # already at the start: stays
        assert x_ticks(loss)[0] == "0"
        await press(pilot, view, "greater_than_sign")
        assert x_ticks(loss)[0] == "20"
        await press(pilot, view, "z")  # last 5 minutes
        lo, hi = view.bounds()  # type: ignore[misc]
        assert hi - lo == 300.0 and float(x_ticks(loss)[0]) >= 75
        await press(pilot, view, "z")  # back to the whole run
        assert x_ticks(loss)[-1] == "80"
        # The plots' words are the view's own: no GPU name or path read from the host.
        texts = [p.text.plain for p in view.query(HistoryPlot) if p.text is not None]
        assert len(texts) == 5 and not any("H200" in t or "/root" in t for t in texts)
        before = loss.text.spans if loss.text is not None else []
        await press(pilot, view, "t")  # another theme: the plots are built again in its colours
        assert loss.text is not None and loss.text.spans != before


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


# A job that writes the pipeline's step events (loss = step + 0.5) to its run's event stream.
JOB = (
    "i=0; while :; do i=$((i+1)); printf "
    """'{"event":"step","time":%s,"step":%d,"loss":%d.5,"tok_s":%d}\\n' """
    '"$(date +%s.%N)" $i $i $((1000+i)) >> "$DFLASH_RUN_DIR/events.jsonl"; '
    'echo "step=$i loss=$i.5"; sleep 0.1; done'
)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"))
    yield h
    transport = make_transport(h)  # the job goes, through control
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


async def test_a_live_runs_steps_reach_the_history_each_once_in_order(host: HostConfig) -> None:
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("l")
        history = app.detail().store.history  # the History tab's, kept while it is hidden
        await until(pilot, lambda: len(history.loss) >= 15, timeout=60)
        losses = [y for _, y in history.loss.points()]
        assert losses == [k + 1.5 for k in range(len(losses))]  # from step 1, none twice
        assert [y for _, y in history.tok_s.points()][:3] == [1001.0, 1002.0, 1003.0]
        assert history.steps_path == f"{app.current.last.diagnosis.run.dir}/events.jsonl"  # type: ignore[union-attr]


async def test_plots_that_cannot_be_made_are_said_so_in_the_tab(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: HistoryPlot, id: str) -> None:
        raise RuntimeError("no plotext [b]here[/b]")

    monkeypatch.setattr(HistoryPlot, "__init__", broken)
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 5, timeout=90)
        await pilot.press("e", "e")
        view = app.detail().history()
        await built(pilot, view)  # the failed mount is not left counting as a build
        title = str(view.query_one("#history-title", Static).render())
        assert "the plots could not be made (RuntimeError: no plotext [b]here[/b])" in title
        assert not list(view.query(HistoryPlot))
        await pilot.press("z")  # the keys still work, and keep saying it
        assert "could not be made" in str(view.query_one("#history-title", Static).render())
