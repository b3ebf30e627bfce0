"""A Static drawn row by row (tui/app/widgets/rows.py) draws what a Static with the same text draws:
the same rows, the same offsets under the mouse (where a text selection starts and ends), and
a selection highlighted as a Static highlights it, kept across a new content."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Offset, Region
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual, visualize
from textual.widget import Widget
from textual.widgets import Static

from dflash_tui.app.widgets.rows import RowStatic, at_line

# A line that fits its row is made by RowStatic without Textual's wrapping (its fast path);
# one that wraps goes through Textual's: both must draw what the Static draws, spans and all.
LINES = [
    Text.assemble(("al", "red"), "pha ", ("line", "bold #00ff00 on #202020")),
    Text("beta line that wraps at this width", "bold"),
    Text.assemble("gam", ("ma", "italic"), style="#3050ff"),
]


class Pair(App[None]):
    CSS = "RowStatic, Static { width: 20; height: 5; }"

    def compose(self) -> ComposeResult:
        yield RowStatic(id="rows")
        yield Static(id="static")


def drawn(widget: Widget) -> list[Strip]:
    """What the compositor gets from ``widget`` (its styles cache, padding and all)."""
    return widget._styles_cache.render_widget(widget, widget.size.region)


def looks(strips: list[Strip]) -> list[list[tuple[str, str, object]]]:
    """Each row's text and style, and the offset its segments map the mouse to."""
    return [
        [(s.text, str(s.style), s.style.meta.get("offset") if s.style else None) for s in strip]
        for strip in strips
    ]


async def test_rows_draw_what_a_static_draws_with_its_offsets_and_selection() -> None:
    app = Pair()
    async with app.run_test(size=(40, 12)) as pilot:
        rows, static = app.query_one("#rows", RowStatic), app.query_one("#static", Static)
        rows.show_rows(LINES)
        static.update(Text("\n").join(LINES))
        await pilot.pause()
        plain = looks(drawn(rows))
        assert plain == looks(drawn(static))
        # A selection inside the wrapped second line: highlighted as in a Static.
        selection = Selection(Offset(2, 1), Offset(12, 1))
        app.screen.selections = {rows: selection, static: selection}
        await pilot.pause()
        assert looks(drawn(rows)) == looks(drawn(static)) != plain
        # A new content while selected, then the selection cleared: still the same.
        new = [*LINES[:2], Text("gamma changed")]
        rows.show_rows(new)
        static.update(Text("\n").join(new))
        await pilot.pause()
        assert looks(drawn(rows)) == looks(drawn(static))
        app.screen.selections = {}
        await pilot.pause()
        assert looks(drawn(rows)) == looks(drawn(static))


@contextlib.asynccontextmanager
async def shown_rows() -> AsyncIterator[tuple[RowStatic, int, VisualStyle]]:
    """A RowStatic showing LINES, with the width and style its rows are made at."""
    app = Pair()
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one("#rows", RowStatic)
        rows.show_rows(LINES)
        await pilot.pause()
        yield rows, rows.size.width, rows.visual_style


def textuals(rows: RowStatic, text: Text, width: int, style: VisualStyle, y: int) -> list[Strip]:
    """What Textual's own layout makes of ``text`` as line ``y``."""
    return at_line(Visual.to_strips(rows, visualize(rows, text), width, None, style), y)


def same_strips(mine: list[Strip] | None, theirs: list[Strip]) -> bool:
    assert mine is not None, "left to Textual"
    return [list(s) for s in mine] == [list(s) for s in theirs] and [
        s.cell_length for s in mine
    ] == [s.cell_length for s in theirs]


# Lines wider than the row, which Textual wraps at word breaks (a GPU panel's process line):
# spaces at a break, several spaces, a span across the break, a word folded, a trailing space.
WRAPPED = [
    Text("23690 python3 21.9 GiB foreign"),
    Text.assemble("one  two   ", ("three four", "bold red"), " five six seven eight"),
    Text.assemble("pid ", ("averyveryverylongprocessname", "italic"), " 1 GiB"),
    Text("short words that wrap twice or more here "),
]


async def test_a_line_that_fits_is_made_as_textual_makes_it_and_others_are_left_to_textual() -> (
    None
):
    async with shown_rows() as (rows, width, style):
        for y in (0, 2):  # they fit: the fast path, segment for segment Textual's
            mine = rows._one_row(LINES[y], width, style, y)
            assert same_strips(mine, textuals(rows, LINES[y], width, style, y))
        for text in [LINES[1], *WRAPPED]:  # wider than a row: Textual wraps them
            assert text.cell_len > width and rows._one_row(text, width, style, 0) is None
        tab, link = Text("a\tb"), Text("see", style=RichStyle(link="https://example.com"))
        assert rows._one_row(tab, width, style, 0) is None
        assert rows._one_row(link, width, style, 0) is None


async def test_wrapped_lines_draw_what_a_static_draws() -> None:
    app = Pair()
    async with app.run_test(size=(40, 12)) as pilot:
        rows, static = app.query_one("#rows", RowStatic), app.query_one("#static", Static)
        rows.show_rows(WRAPPED[:3])
        static.update(Text("\n").join(WRAPPED[:3]))
        await pilot.pause()
        assert looks(drawn(rows)) == looks(drawn(static))


async def test_lines_textual_would_trim_pad_or_align_are_left_to_it() -> None:
    async with shown_rows() as (rows, width, style):
        # More characters than the row has cells (combining marks): Textual's wrap may trim
        # them, so the line is Textual's to make.
        combining = Text("e\u0301" * 9 + "   ")
        assert combining.cell_len <= width < len(combining.plain)
        assert rows._one_row(combining, width, style, 0) is None
        assert rows._one_row(LINES[0], width, style, 0) is not None
        rows.styles.content_align_horizontal = "center"
        assert rows._one_row(LINES[0], width, style, 0) is None
        rows.styles.content_align_horizontal = "left"
        rows.styles.line_pad = 1
        assert rows._one_row(LINES[0], width, style, 0) is None


async def test_a_changed_line_that_wraps_repaints_only_its_rows_that_look_different() -> None:
    """A process line wraps onto two rows; its first word changes, its second row does not:
    only the first row is asked to repaint, and what is drawn is still what a Static draws."""
    app = Pair()
    async with app.run_test(size=(40, 12)) as pilot:
        rows, static = app.query_one("#rows", RowStatic), app.query_one("#static", Static)
        before = [Text("12345 python3 21.9 GiB foreign"), LINES[2]]
        rows.show_rows(before)
        await pilot.pause()
        asked: list[Region | None] = []
        real = rows.refresh

        def counted(*regions: Region, **kw: object) -> object:
            asked.extend(regions or [None])
            return real(*regions, **kw)  # type: ignore[arg-type]

        rows.refresh = counted  # type: ignore[method-assign]
        after = [Text("12345 python3 23.8 GiB foreign"), LINES[2]]
        assert rows.show_rows(after)
        assert asked == [Region(0, 0, rows.size.width, 1)]  # not row 1 ("foreign")
        static.update(Text("\n").join(after))
        await pilot.pause()
        assert looks(drawn(rows)) == looks(drawn(static))


async def test_kept_styles_draw_what_textual_draws_after_a_change_and_a_theme_switch() -> None:
    """The span styles converted once and the offset styles kept per widget (rows.py) give
    the same rows as Textual's own conversion, drawn again after the lines changed and
    after the theme changed."""
    app = Pair()
    ansi = Text.assemble(("warn", "red"), " mid ", ("ok", "bold green on blue"))
    async with app.run_test(size=(40, 12)) as pilot:
        rows, static = app.query_one("#rows", RowStatic), app.query_one("#static", Static)
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            for lines in ([ansi, *WRAPPED[:2]], [ansi.copy(), *WRAPPED[1:3]]):
                rows.show_rows(lines)
                static.update(Text("\n").join(lines))
                await pilot.pause()
                assert looks(drawn(rows)) == looks(drawn(static))
        assert rows._visual  # the kept ones were used, not only made


# Lines where a piece's place is harder to tell: a fold inside a run of spaces, spaces that
# open the line, a run of spaces longer than a row, a word longer than two rows.
AWKWARD = [
    Text("x" * 18 + "     tail words here"),
    Text("   lead and more words to wrap"),
    Text("a" + " " * 45 + "b"),
    Text.assemble(("y" * 45, "bold"), " end"),
]


async def test_a_wrapped_line_is_made_as_textual_makes_it_piece_by_piece() -> None:
    """A line wider than its row: each piece of Textual's ``Content.wrap`` made at its
    offset in the line, segment for segment what Textual's own layout makes, as line 0
    and as a later line; where a piece's place cannot be told, Textual makes it."""
    async with shown_rows() as (rows, width, style):
        for text in WRAPPED:
            for y in (0, 3):
                mine = rows._wrapped_rows(text, width, style, y)
                assert same_strips(mine, textuals(rows, text, width, style, y))
        for text in AWKWARD:
            mine = rows._wrapped_rows(text, width, style, 2)
            if mine is not None:
                assert same_strips(mine, textuals(rows, text, width, style, 2)), text.plain
        assert rows._wrapped_rows(Text("ab日" * 10), width, style, 0) is None  # wide: Textual's
        rows.styles.text_overflow = "ellipsis"  # a piece may be cut: Textual's to make
        assert rows._wrapped_rows(WRAPPED[2], width, style, 0) is None
