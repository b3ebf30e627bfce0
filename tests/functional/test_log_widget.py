"""The tail's log widget (on Textual's Line API) measures every batch inline and finds its
style once a draw: the same widths, lines, drawn rows and selected text as Textual's own Log,
and no thread worker per write (a flood's writes start none, nor do wide characters)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Offset, Region
from textual.selection import Selection
from textual.widgets import Log

from dflash_tui.app.host.logs.widget import TailLog, plain_width

BATCHES = [
    ["step=1 loss=2.0", "x" * 300, ""],
    ["plain ascii", "wide 漢字 line", "tab\there"],
    ["┄┄ 12 lines not shown ┄┄", "ok"],
    [],
]


@pytest.mark.parametrize(
    ("lines", "width"),
    [(["a", "abc", ""], 3), ([], 0), (["漢字"], None), (["a\tb"], None), (["\x1b[0m"], None)],
)
def test_plain_width(lines: list[str], width: int | None) -> None:
    assert plain_width(lines) == width


class Pair(App[None]):
    def compose(self) -> ComposeResult:
        yield Log(id="textual")
        yield TailLog(id="tail")


@pytest.mark.parametrize("lines", BATCHES)
async def test_widths_match_textuals_log(lines: list[str]) -> None:
    app = Pair()
    async with app.run_test(size=(60, 20)) as pilot:
        ours, theirs = app.query_one("#tail", TailLog), app.query_one("#textual", Log)
        for log in (ours, theirs):
            log.write_lines(["short"])
            log.write_lines(lines)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ours.virtual_size == theirs.virtual_size
        assert ours.lines == theirs.lines


async def test_plain_batches_start_no_worker() -> None:
    app = Pair()
    async with app.run_test(size=(60, 20)):
        log = app.query_one("#tail", TailLog)
        before = len(app.workers)
        log.write_lines([f"step={i} loss=1.25" for i in range(2000)])
        assert len(app.workers) == before
        assert log.virtual_size.width == len("step=1999 loss=1.25")


async def test_wide_batches_start_no_worker_either() -> None:
    app = Pair()
    async with app.run_test(size=(60, 20)):
        log = app.query_one("#tail", TailLog)
        before = len(app.workers)
        log.write_lines(["wide 漢字 line", "tab\there"])
        assert len(app.workers) == before
        assert log.virtual_size.width == len("wide ") + 4 + len(" line")


async def test_selected_text_matches_textuals_log() -> None:
    app = Pair()
    async with app.run_test(size=(60, 20)):
        ours, theirs = app.query_one("#tail", TailLog), app.query_one("#textual", Log)
        lines = ["step=1 loss=2.0", "漢字 wide", "third line"]
        picks = [Selection(Offset(2, 0), Offset(4, 2)), Selection(None, None)]
        for log in (ours, theirs):
            log.write_lines(lines)
        for pick in picks:
            assert ours.get_selection(pick) == theirs.get_selection(pick)


async def test_drawn_rows_match_textuals_log() -> None:
    app = Pair()
    async with app.run_test(size=(60, 20)) as pilot:
        ours, theirs = app.query_one("#tail", TailLog), app.query_one("#textual", Log)
        lines = ["step=1 loss=2.0 {'a': 1}", "Error: x", "", "漢字 wide", "x" * 90] * 10
        for log in (ours, theirs):
            log.write_lines(lines)
            log.scroll_to(y=20, animate=False, immediate=True)
        app.set_focus(None)  # the focused one is drawn in another colour
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ours.size == theirs.size and ours.size.height > 0
        crop = Region(0, 0, ours.size.width, ours.size.height)
        drawn = [list(strip) for strip in ours.render_lines(crop)]
        assert drawn == [list(strip) for strip in theirs.render_lines(crop)]
        assert ours._draw_style is None  # found again for the next draw (a theme may change)
