"""The Log widget a tail draws its lines in: Textual's Log, measuring plain lines inline.

Textual's Log measures the width of every batch it is given in a thread worker of its own: a
flood's 20 writes a second start 20 threads, each measuring thousands of lines while holding the
GIL, and three worker-state messages each that climb the whole DOM to the app. A tail's lines are
sanitised first (``clean_line``): when a batch is all printable ASCII, its width is the longest
line's length, found in a fraction of a millisecond on the event loop. Any other batch (wide
characters, the tail's own gap marks) is measured the way Textual does.

Relies on two private methods of Textual's Log (textual is pinned; tests/unit/test_log_widget.py
checks the widths against Textual's own measure).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.widgets import Log


def plain_width(lines: Sequence[str]) -> int | None:
    """The widest line's cells when every line is printable ASCII (one cell a character, no tab
    or escape to expand), else None."""
    width = 0
    for line in lines:
        if not (line.isascii() and line.isprintable()):
            return None
        width = max(width, len(line))
    return width


class TailLog(Log):
    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]
        width = plain_width(lines)
        if width is None:
            super()._update_size(updates, lines)  # Textual's thread worker
        elif lines:
            self._update_maximum_width(updates, width)
