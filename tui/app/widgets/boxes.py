"""The input boxes that open inside a widget (log search and filter, the GPU process filter):
a class on the widget shows the box (its CSS), which opens holding the text in force."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Input


def open_box(widget: Widget, cls: str, box_id: str, value: str) -> Input:
    """Shows ``widget``'s input ``box_id`` by adding ``cls``, fills it with ``value`` and
    focuses it; returns the box."""
    widget.add_class(cls)
    box = widget.query_one(f"#{box_id}", Input)
    box.value = value
    box.focus()
    return box
