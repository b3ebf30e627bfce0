"""One plot of the History tab: a textual-plotext widget that shows the text its view built
off the UI thread. In a module of its own so that plotext is imported only when the tab is
first shown (tui/app/host/history/view.py mounts the plots then)."""

from __future__ import annotations

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot


class HistoryPlot(PlotextPlot):
    """A plot that shows the text its view built off the UI thread (``show``); never builds
    on the UI thread itself (a resize makes the view build again)."""

    def __init__(self, id: str) -> None:
        super().__init__(id=id)
        self.text: Text | None = None
        self.text_size = (0, 0)

    def show(self, text: Text, size: tuple[int, int]) -> None:
        self.text, self.text_size = text, size
        self.refresh()

    def render(self) -> RenderResult:
        return self.text if self.text is not None else Text()

    def theme_name(self) -> str:
        return self._get_plotext_theme_name(self.app.theme)
