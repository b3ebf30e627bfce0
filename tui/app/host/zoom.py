"""Zoom (``+``, lazydocker's): the focused area of a host's pane (a log, the tree, the
timeline, the findings, the history, the GPU process table, the GPU grid) fills the pane, and
``+`` again brings the rest back.

Classes only, never inline styles: ``-zoom-path`` on the area and each container up to the
screen (full size), ``-zoom-hidden`` on their siblings. Removing them restores exactly what
the CSS says, so a tab switched while zoomed (History hides the grid) still lays out right.
A ContentSwitcher's children are left alone: it shows one of them itself."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, TabbedContent

from dflash_tui.app.host.findings.panel import FindingsList, TimelineList
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.widgets.waits import WaitBar

KEEP = (Footer, WaitBar)  # the keys and a kill's progress stay on screen


def areas() -> tuple[type[Widget], ...]:
    """The zoomable areas' classes. The History's and the GPU table's modules are imported
    here, not with the app: their tabs' views are made only when first shown."""
    from dflash_tui.app.host.history.view import HistoryView
    from dflash_tui.app.host.procs.gpu_table import GpuProcView

    return (LogTail, ProcTree, TimelineList, FindingsList, HistoryView, GpuProcView, GpuGrid)


def area_of(widget: Widget | None) -> Widget | None:
    """The zoomable area that holds ``widget`` (itself or an ancestor)."""
    kinds = areas()
    while widget is not None:
        if isinstance(widget, kinds):
            return widget
        parent = widget.parent
        widget = parent if isinstance(parent, Widget) else None
    return None


class Zoom:
    """One pane's zoom state."""

    def __init__(self, pane: Widget) -> None:
        self.pane = pane
        self.area: Widget | None = None
        self._path: list[Widget] = []
        self._hidden: list[Widget] = []

    @property
    def on(self) -> bool:
        return self.area is not None

    def toggle(self, focused: Widget | None) -> Widget | None:
        """Zoom the area holding ``focused`` (None: nothing zoomable is focused), or unzoom."""
        if self.on:
            self.off()
            return None
        area = area_of(focused)
        if area is None or self.pane not in area.ancestors:
            return None
        self.area = area
        node: Widget = area
        while isinstance(node.parent, Widget) and node is not self.pane.screen:
            parent = node.parent
            self._path.append(node)
            if not isinstance(parent, ContentSwitcher | TabbedContent):
                for sib in parent.children:
                    if sib is not node and sib.display and not isinstance(sib, KEEP):
                        self._hidden.append(sib)
            node = parent
        for w in self._path:
            w.add_class("-zoom-path")
        for w in self._hidden:
            w.add_class("-zoom-hidden")
        return area

    def off(self) -> None:
        for w in self._path:
            w.remove_class("-zoom-path")
        for w in self._hidden:
            w.remove_class("-zoom-hidden")
        self.area, self._path, self._hidden = None, [], []


__all__ = ["Zoom", "area_of"]
