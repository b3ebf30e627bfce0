"""The widget a tail draws its lines in: a scrolling view of plain lines on Textual's public Line
API (``render_line`` returning ``Strip``s, as Textual's own Log does), drawing each row as Log
draws it.

It is not Textual's Log because Log measures the width of every batch it is given in a thread
worker of its own, and its public methods offer no way around that: a flood's 20 writes a second
start 20 threads, each measuring thousands of lines while holding the GIL, and three
worker-state messages each that climb the whole DOM to the app (the longest key wait of
bench/log_flood.py's flood drawn whole doubles). Here a batch is measured inline: a tail's lines
are sanitised first (``clean_line``), so a batch is almost always printable ASCII, whose width
is the longest line's length (a fraction of a millisecond); any other batch (wide characters,
the tail's own gap marks) is measured cell by cell, as Log does, on the event loop.

A draw of the whole pane finds the widget's style once (``rich_style`` walks the widget's
ancestors: 40 % of a drawn row's time when asked a row).

tests/functional/test_log_widget.py checks the widths, the lines and the drawn rows against
Textual's own Log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.highlighter import Highlighter, ReprHighlighter
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

_CONTROLS = re.compile("[\u0000-\u0014]")  # what Log draws as U+FFFD


def plain_width(lines: Sequence[str]) -> int | None:
    """The widest line's cells when every line is printable ASCII (one cell a character, no tab
    or escape to expand), else None."""
    joined = "".join(lines)  # two scans in C, not two calls a line
    if not (joined.isascii() and joined.isprintable()):
        return None
    return max(map(len, lines), default=0)


def drawn_text(line: str) -> str:
    """A line as drawn: tabs expanded, control characters as U+FFFD (as Log draws them)."""
    return _CONTROLS.sub("\ufffd", line.expandtabs())


def batch_width(lines: Sequence[str]) -> int:
    """The widest line's cells once drawn."""
    width = plain_width(lines)
    if width is None:
        width = max((cell_len(drawn_text(line)) for line in lines), default=0)
    return width


class TailLog(ScrollView, can_focus=True):
    """Lines, scrolled both ways, the last ``max_lines`` kept; the rows drawn as Textual's Log
    draws them (with ``highlighter`` when ``highlight``) and selectable with the mouse."""

    ALLOW_SELECT = True
    DEFAULT_CSS = """
    TailLog {
        background: $surface;
        color: $text;
        overflow: scroll;
        &:focus { background-tint: $foreground 5%; }
    }
    """

    _draw_style: Style | None = None  # the style, found once for the draw under way

    class Resized(Message):
        """The view's own size changed, its first layout too: whether its lines are cut
        (its owner's title says so) is known again."""

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    def __init__(
        self,
        highlight: bool = False,
        max_lines: int | None = None,
        auto_scroll: bool = True,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.highlight = highlight
        self.highlighter: Highlighter = ReprHighlighter()
        self.max_lines = max_lines
        self.auto_scroll = auto_scroll
        self._lines: list[str] = []
        self._width = 0

    @property
    def lines(self) -> Sequence[str]:
        """The lines kept (read only)."""
        return self._lines

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> TailLog:
        """Add lines (each split at its line breaks, as Log does); scroll to the end when
        ``scroll_end`` (None: ``auto_scroll``) and the view was at its end."""
        at_end = self.is_vertical_scroll_end
        new = [part for line in lines for part in line.splitlines()]
        start = len(self._lines)
        self._lines.extend(new)
        cut = len(self._lines) - self.max_lines if self.max_lines is not None else 0
        if cut > 0:
            del self._lines[:cut]
            start = max(0, start - cut)
        self._width = max(self._width, batch_width(new))
        self.virtual_size = Size(self._width, len(self._lines))
        self.refresh_lines(start, len(new))
        follow = self.auto_scroll if scroll_end is None else scroll_end
        if follow and at_end and not self.is_vertical_scrollbar_grabbed:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.refresh()
        return self

    def clear(self) -> TailLog:
        self._lines.clear()
        self._width = 0
        self.virtual_size = Size(0, 0)
        return self

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self._lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    @property
    def rich_style(self) -> Style:
        return self._draw_style if self._draw_style is not None else super().rich_style

    def render_lines(self, crop: Region) -> list[Strip]:
        # Nothing changes a style during a draw: no await, no other thread touches the DOM.
        self._draw_style = super().rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._draw_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        y += scroll_y
        width, style = self.size.width, self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._row(y, style).crop_extend(scroll_x, scroll_x + width, style)
        return strip.apply_offsets(scroll_x, y)

    def _row(self, y: int, style: Style) -> Strip:
        """Line ``y`` whole: styled, highlighted, the selection marked."""
        line = drawn_text(self._lines[y])
        text = Text(line, no_wrap=True)
        text.stylize(style)
        if self.highlight:
            text = self.highlighter(text)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            start, end = span
            marked = self.screen.get_component_rich_style("screen--selection")
            text.stylize(marked, start, len(text) if end == -1 else end)
        return Strip(text.render(self.app.console), cell_len(line))
