"""Widgets removed without the lines they drew.

Textual keeps, after a widget is gone, the cache of the lines it drew: its ``StylesCache``
(one a widget) stays a key of an ``lru_cache`` of up to 1024 entries on one of its methods
(``get_inner_outer``; https://github.com/Textualize/textual/issues/6665, open in the pinned
release), with every line in it and those lines' own caches. A host's pane has its widgets
removed once other hosts were shown and made again when it is shown, so a user going through
the hosts left tens of MiB of lines no widget would draw again (bench/panes_visited.py).
``Widget.refresh()`` empties a widget's line cache (so that it draws anew): done just before
the removal, what stays behind is the empty cache alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual.widget import Widget


def drawing_widgets(root: Widget) -> Iterator[Widget]:
    """``root``, everything in it, and their scroll bars: the widgets that hold drawn lines.
    A scroll bar is a widget of its own, outside its widget's children, and exists once
    shown (the corner between two bars, a cell or two, is left: asking for it makes one)."""
    for widget in root.walk_children(Widget, with_self=True):
        yield widget
        if widget.show_vertical_scrollbar:
            yield widget.vertical_scrollbar
        if widget.show_horizontal_scrollbar:
            yield widget.horizontal_scrollbar


def let_go_of_lines(root: Widget) -> None:
    """Empty the drawn-line caches of ``root`` and everything in it, before it is removed."""
    for widget in drawing_widgets(root):
        widget.refresh()
