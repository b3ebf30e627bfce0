"""The Log widget a tail draws its lines in: Textual's Log, measuring plain lines inline and
finding its style once a draw.

Textual's Log measures the width of every batch it is given in a thread worker of its own: a
flood's 20 writes a second start 20 threads, each measuring thousands of lines while holding the
GIL, and three worker-state messages each that climb the whole DOM to the app. A tail's lines are
sanitised first (``clean_line``): when a batch is all printable ASCII, its width is the longest
line's length, found in a fraction of a millisecond on the event loop. Any other batch (wide
characters, the tail's own gap marks) is measured the way Textual does.

Log also asks for its style (``rich_style``) on every row it draws, and each ask walks the
widget's ancestors: 40 % of a drawn row's time. A draw of the whole pane finds it once.

Relies on private methods of Textual's Log (textual is pinned; tests/functional/
test_log_widget.py checks the widths and the drawn rows against Textual's own Log).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Log


def plain_width(lines: Sequence[str]) -> int | None:
    """The widest line's cells when every line is printable ASCII (one cell a character, no tab
    or escape to expand), else None."""
    joined = "".join(lines)  # two scans in C, not two calls a line
    if not (joined.isascii() and joined.isprintable()):
        return None
    return max(map(len, lines), default=0)


class TailLog(Log):
    """Textual's Log, measuring a printable-ASCII batch's width inline (no thread worker per
    write) and finding its style once a draw (module docstring)."""

    _draw_style: Style | None = None  # the style, found once for the draw under way

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

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]
        width = plain_width(lines)
        if width is None:
            super()._update_size(updates, lines)  # Textual's thread worker
        elif lines:
            self._update_maximum_width(updates, width)
