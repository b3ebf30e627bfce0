"""Draw only what changed: a sample that changes nothing a widget shows costs that
widget no redraw; a changed field is drawn at once, on its own panel only; a hidden tab's table
is filled when it is shown, not on every sample.

Redraws are counted on the real widgets, by wrapping each one's own ``refresh`` (every redraw
request of a Textual widget, whether from new content, a border title or a class, goes
through it). The GPU panels are drawn by one widget, the grid's board: a panel's redraw is a
repaint of the board's cells in that panel's box."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

from rich.console import Console
from support import screen_text, until
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets._progress_bar import Bar

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.gpus.board import GpuBoard
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.gpus.panel import HISTORY, held
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.procs.gpu_table import GpuProcView
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot


def board_repaints(board: GpuBoard) -> list[Region]:
    """The regions of ``board`` asked to repaint from now on, on the screen (a refresh with no
    region: the whole board)."""
    asked: list[Region] = []
    real: Callable[..., Any] = board.refresh

    def counted(*regions: Region, **kw: Any) -> Any:
        offset = board.region.offset
        asked.extend(r.translate(offset) for r in regions or [board.size.region])
        return real(*regions, **kw)

    board.refresh = counted  # type: ignore[method-assign]
    return asked


def boxes(app: DflashApp) -> dict[int, Region]:
    """Each GPU's panel box on the screen."""
    grid = app.detail().query_one(GpuGrid)
    return {i: r for i in grid.panels if (r := grid.region_of(i)) is not None}


def count_refreshes(widget: Any) -> list[int]:
    """A counter of ``widget.refresh`` calls from now on."""
    calls = [0]
    real: Callable[..., Any] = widget.refresh

    def counted(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        return real(*args, **kw)

    widget.refresh = counted
    return calls


@contextlib.asynccontextmanager
async def seeded() -> AsyncIterator[tuple[DflashApp, Pilot, ScriptedSource, Snapshot]]:
    """The app after the seed incident's samples, settled; its source takes pushes."""
    snaps = scenes.seed_incident()
    source = ScriptedSource(snaps)
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.pause(0.3)
        yield app, pilot, source, snaps[-1]


def with_util(snap: Snapshot, index: int, util: int) -> Snapshot:
    gpus = tuple(dataclasses.replace(g, util=util) if g.index == index else g for g in snap.gpus)
    return dataclasses.replace(snap, gpus=gpus)


async def test_an_identical_sample_redraws_nothing_and_a_change_only_its_panel() -> None:
    async with seeded() as (app, pilot, source, last):
        start = app.samples
        pane = app.detail()
        grid = pane.query_one(GpuGrid)
        panels = grid.panels
        assert len(panels) == 8
        repaints = board_repaints(grid.board)
        header = count_refreshes(pane.query_one(RunHeader))
        findings = count_refreshes(pane.query_one(FindingsList).query_one(".body"))
        # The seed incident's last sample again, as it was: nothing on screen changes.
        for _ in range(3):
            source.push(last)
        await until(pilot, lambda: app.samples >= start + 3)
        await pilot.pause(0.3)
        assert repaints == []
        assert header[0] == 0
        assert findings[0] == 0
        # GPU 5 busy now: its panel shows it, at once; no other panel redraws.
        assert "util" in screen_text(app)
        source.push(with_util(last, 5, 57))
        await until(pilot, lambda: app.samples >= start + 4)
        await pilot.pause(0.3)
        assert repaints
        assert all(boxes(app)[5].contains_region(r) for r in repaints), repaints
        assert " 57%" in str(panels[5].render())


def styled_rows(app: Any) -> list[str]:
    """The screen as the compositor draws it from scratch, one string per row, colours and
    styles included (what a stale kept row would differ in)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, color_system="truecolor"
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text(styles=True).split("\n")


async def test_a_moved_reading_repaints_only_the_rows_that_changed_and_they_are_true() -> None:
    """GPU 2 (busy with no memory) stays so, at 97 % and 590 W: the rows of its panel that
    now look different (the util meter, the subtitle in the bottom border) are the ones asked
    to repaint, not its whole box nor another panel; and the rows kept are what a
    from-scratch render of every panel draws."""
    async with seeded() as (app, pilot, source, last):
        start = app.samples
        grid = app.detail().query_one(GpuGrid)
        panels = grid.panels
        asked = board_repaints(grid.board)
        before = styled_rows(app)
        gpus = tuple(
            dataclasses.replace(g, util=97, power_w=590.0) if g.index == 2 else g for g in last.gpus
        )
        source.push(dataclasses.replace(last, gpus=gpus))
        await until(pilot, lambda: app.samples >= start + 1)
        await pilot.pause(0.3)
        after = styled_rows(app)
        changed = {y for y, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
        box = boxes(app)[2]
        assert changed and changed <= set(box.line_range)  # no other panel looks different
        # Everything that looks different was repainted, in GPU 2's box only, never all of it.
        assert changed <= {y for r in asked for y in r.line_range}
        assert asked and all(box.contains_region(r) and r.height < box.height for r in asked)
        assert box.bottom - 1 in changed  # the subtitle's row: 590W
        assert " 97%" in str(panels[2].render())
        # What the kept rows show is what the panels draw from nothing.
        for panel in panels.values():
            panel._made = None
        grid.board._made.clear()
        grid.board._rows_key = None
        grid.board.draw()
        grid.board.refresh()
        await pilot.pause(0.3)
        assert styled_rows(app) == after


async def test_panels_that_stand_are_not_made_again_nor_their_row_of_the_board() -> None:
    """Once the sparklines' windows hold one reading each, a sample that brings the same
    views makes no panel again; one that moves GPU 2 makes its panel and its row of the
    board again, and the board's other row of panels keeps its lines (the same objects,
    whose strips the board keeps). What is then on screen is held by the tests above."""
    async with seeded() as (app, pilot, source, last):
        start = app.samples
        for _ in range(HISTORY):
            source.push(last)
        await until(pilot, lambda: app.samples >= start + HISTORY)
        await pilot.pause(0.3)
        board = app.detail().query_one(GpuGrid).board
        made = {i: p.shown for i, p in board.panels.items()}
        rows_of_panels = dict(board._groups)
        source.push(last)
        await until(pilot, lambda: app.samples >= start + HISTORY + 1)
        await pilot.pause(0.3)
        assert all(p.shown is made[i] for i, p in board.panels.items())
        assert all(board._groups[f] is lines for f, lines in rows_of_panels.items())
        source.push(with_util(last, 2, 57))
        await until(pilot, lambda: app.samples >= start + HISTORY + 2)
        await pilot.pause(0.3)
        assert [i for i, p in board.panels.items() if p.shown is not made[i]] == [2]
        first = sorted(board.panels).index(2) // board.columns * board.columns
        assert len(rows_of_panels) == 2 and first in rows_of_panels
        for f, lines in rows_of_panels.items():
            assert (board._groups[f] is lines) == (f != first), f
        assert " 57%" in str(board.panels[2].render())


def test_a_held_time_coarsens_as_it_grows_and_never_rounds_up() -> None:
    held_for = (-1, 0, 9.9, 10, 59.9, 60, 119, 3599, 3600, 3659, 3660, 90061)
    assert [held(s) for s in held_for] == [
        "0s",
        "0s",
        "0s",
        "10s",
        "50s",
        "1m",
        "1m",
        "59m",
        "1h00m",
        "1h00m",
        "1h01m",
        "25h01m",
    ]


async def test_a_steady_panel_redraws_once_a_minute_past_its_first_minute() -> None:
    """The seed incident's labels have held for at least 6 minutes (since before the first
    sample): the same readings 20 s later say the same (``>= 6m``) and draw nothing; past the
    next minute the chips say ``>= 7m``."""
    async with seeded() as (app, pilot, source, last):
        start = app.samples
        grid = app.detail().query_one(GpuGrid)
        panels = grid.panels
        assert "busy-no-memory >= 6m " in str(panels[2].render())
        repaints = board_repaints(grid.board)
        for later in (10, 20):
            source.push(dataclasses.replace(last, time=last.time + later))
        await until(pilot, lambda: app.samples >= start + 2)
        await pilot.pause(0.3)
        assert repaints == []
        source.push(dataclasses.replace(last, time=last.time + 61))
        await until(pilot, lambda: app.samples >= start + 3)
        await pilot.pause(0.3)
        assert "busy-no-memory >= 7m " in str(panels[2].render())
        assert repaints and "busy-no-memory >= 7m " in screen_text(app)


async def test_the_same_process_rows_touch_no_tree_node_and_a_new_one_is_added() -> None:
    async with seeded() as (app, pilot, source, last):
        start = app.samples
        tree = app.detail().query_one(ProcTree)
        refreshes = count_refreshes(tree)
        placed = [0]
        place = tree._place

        def counted_place(*args: Any) -> None:
            placed[0] += 1
            place(*args)

        tree._place = counted_place  # type: ignore[method-assign]
        source.push(dataclasses.replace(last, time=last.time + 1))
        await until(pilot, lambda: app.samples >= start + 1)
        await pilot.pause(0.3)
        assert refreshes[0] == 0 and placed[0] == 0
        # A new process under a listed one (the run's group: shown) is added at once.
        parent = next(p for p in last.procs if p.pid in tree.nodes)
        child = dataclasses.replace(parent, pid=parent.pid + 100_000, ppid=parent.pid)
        source.push(dataclasses.replace(last, procs=(*last.procs, child)))
        await until(pilot, lambda: app.samples >= start + 2)
        await pilot.pause(0.3)
        assert parent.pid + 100_000 in tree.nodes and placed[0] > 0


async def test_a_hidden_gpu_process_table_fills_when_shown() -> None:
    snaps = scenes.gpu_processes()
    source = ScriptedSource(snaps)
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.pause(0.3)
        # Its tab was never shown: no table is made, the samples wait in the pane.
        assert not app.detail().query(GpuProcView) and app.detail().latest is not None
        await pilot.press("p")
        view = app.detail().query_one(GpuProcView)
        await until(pilot, lambda: view.table.row_count > 0)
        assert not view.pending
        assert view.table.row_count == len(view.shown) == len(view.rows)
        # Shown, an identical sample does not rebuild the table.
        filled = view.table.row_count
        table = count_refreshes(view.table)
        source.push(snaps[-1])
        await until(pilot, lambda: app.samples >= len(snaps) + 1)
        await pilot.pause(0.3)
        assert table[0] == 0
        assert view.table.row_count == filled


async def test_a_quiet_screen_keeps_no_timer_running() -> None:
    """Between samples nothing wakes the app: the log tails' flush timer pauses once their
    lines are drawn (and runs again for a sample's new lines), the hidden wait bar does not
    animate (an indeterminate Textual bar runs a 15 Hz timer even hidden); the log lines
    still show, and the wait bar still animates while a wait runs."""
    snaps = scenes.healthy_run()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        area = app.detail().query_one(LogArea)
        await until(pilot, lambda: not area.flushing)
        assert area.tails
        last = snaps[-1].logs[0].lines[-1]
        assert last in screen_text(app)
        tail = next(iter(area.tails.values()))
        later = f"{last} (again)"
        tail.data.store.add([later])
        area.sync()  # as a sample drawn does
        assert area.flushing
        await until(pilot, lambda: later in screen_text(app))
        await until(pilot, lambda: not area.flushing)
        # No link styling pass over the panels' lines (they have no links).
        assert not app.detail().query_one(GpuBoard).auto_links
        wait = app.screen.query_one(WaitBar)
        assert not wait.query(Bar)  # none until the first wait: nothing of it can animate
        wait.start("stopping the run")
        wait.step("waiting for the process group to exit")
        await until(pilot, lambda: bool(wait.query(Bar)))
        await pilot.pause()
        bar = wait.query_one(Bar)
        assert bar.auto_refresh is not None  # the indeterminate bar moves while it waits
        assert "waiting for the process group" in str(wait.query_one("#wait-text").render())
        wait.stop()
        await pilot.pause()
        assert bar.auto_refresh is None
        wait.start("again")  # the same widgets: a hidden bar is kept, not made twice
        await pilot.pause()
        assert wait.query_one(Bar) is bar and bar.auto_refresh is not None
        wait.stop()
        await pilot.pause()
        assert bar.auto_refresh is None


async def test_opening_the_filter_box_on_a_quiet_log_keeps_it_at_its_end() -> None:
    """The flush timer has paused (no samples come any more); the filter box takes three rows
    from the tails, which leaves a following tail short of its end until something scrolls it:
    the tail's resize wakes the timer, and the newest line is on screen again."""
    snaps = scenes.healthy_run()
    many = tuple(f"step={i} loss=1.0 tok/s=100" for i in range(300))
    last = snaps[-1]
    logs = (dataclasses.replace(last.logs[0], lines=last.logs[0].lines + many),)
    snaps = [*snaps[:-1], dataclasses.replace(last, logs=logs)]
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        area = app.detail().query_one(LogArea)
        await until(pilot, lambda: not area.flushing)
        view = next(iter(area.tails.values())).log_view
        assert view.is_vertical_scroll_end
        height = view.scrollable_content_region.height
        await area.open_filter()
        await until(pilot, lambda: view.scrollable_content_region.height < height)
        await until(pilot, lambda: view.is_vertical_scroll_end)
        assert many[-1] in screen_text(app)
