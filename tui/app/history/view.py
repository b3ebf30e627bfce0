"""The History tab's widget. ``HistoryView`` owns one host's ``RunHistory`` and how it is drawn
(as Posting's panes own their display): the pane hands it every sample, it keeps the history
while hidden and plots only while shown, at most every HISTORY_REDRAW_S seconds and with at most
one point per column of each plot (a bucket's lowest and highest per two columns): plotext
builds on the UI thread, about 0.1 s a plot of 8 lines on a loaded 2-core machine
(bench/history_steps.py; five times that with 2048 points a line).

Plots are textual-plotext's: plotext renders ANSI text that Rich reads as ANSI, never as
markup. Their text (titles, axis labels, legends) is this module's own words and numbers, with
GPU indexes; nothing read from the host (a GPU's name, a path) reaches them.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.timings import HISTORY_REDRAW_S
from dflash_tui.core.diagnosis.history import RunHistory, Thinned, View, decimate, window

# (id, title, y label) of each plot; the GPU plots have one line per GPU.
RUN_PLOTS = (("plot-loss", "loss", "loss"), ("plot-toks", "tok/s", "tok/s"))
GPU_PLOTS = (
    ("plot-util", "GPU utilisation %", "util"),
    ("plot-power", "GPU power W", "power"),
    ("plot-mem", "GPU memory used %", "mem"),
)
# Its keys work, and show in the footer and help, only while the tab is shown (the app's
# check_action; the bindings are the main screen's, tui/app/layout.py).
HISTORY_ACTIONS = frozenset({"history_zoom", "history_pan"})
HISTORY_HELP: tuple[tuple[str, str], ...] = (
    ("z", "History: zoom, cycling whole run / last 1 h / last 5 min"),
    ("< / >", "History: pan half a window back / forward in time"),
)
KEYS_NOTE = "z zoom (whole run / 1 h / 5 min)   < > pan"


class HistoryView(Vertical):
    """One host's History tab (id ``history``)."""

    DEFAULT_CSS = """
    HistoryView { height: 1fr; }
    HistoryView #history-title { height: 1; padding: 0 1; }
    HistoryView Horizontal { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__(id="history")
        self.history = RunHistory()
        self.view = View()
        self.dirty = False  # samples arrived since the last plot

    def compose(self) -> ComposeResult:
        yield Static(id="history-title", markup=False)
        with Horizontal(id="history-run"):
            for pid, _, _ in RUN_PLOTS:
                yield PlotextPlot(id=pid)
        with Horizontal(id="history-gpus"):
            for pid, _, _ in GPU_PLOTS:
                yield PlotextPlot(id=pid)

    def on_mount(self) -> None:
        self.replot()
        self.set_interval(HISTORY_REDRAW_S, self._redraw)

    def add(self, snap: Snapshot) -> None:
        """Fold one sample; it is plotted at the next redraw while the tab is shown."""
        self.history.add(snap)
        self.dirty = True

    def _redraw(self) -> None:
        if self.dirty and self.shown:
            self.replot()

    @property
    def shown(self) -> bool:
        return self.is_mounted and self.display and self.is_on_screen

    def zoom(self) -> None:
        self.view = self.view.next_zoom()
        self.replot()

    def pan(self, halves: int) -> None:
        self.view = self.view.pan(halves, self.history.span())
        self.replot()

    def bounds(self) -> tuple[float, float] | None:
        """The times shown now (None: nothing recorded yet)."""
        return self.view.bounds(self.history.span())

    def replot(self) -> None:
        self.dirty = False
        span = self.history.span()
        shown = self.view.bounds(span)
        self.query_one("#history-title", Static).update(Text(self.title(span, shown)))
        h = self.history
        self._plot("plot-loss", "loss", [("loss", h.loss)], span, shown)
        self._plot("plot-toks", "tok/s", [("tok/s", h.tok_s)], span, shown)
        gpus = sorted(h.gpus.items())
        for pid, title, attr in GPU_PLOTS:
            lines = [(f"GPU {i}", getattr(g, attr)) for i, g in gpus]
            self._plot(pid, title, lines, span, shown)

    def title(self, span: tuple[float, float] | None, shown: tuple[float, float] | None) -> str:
        if span is None or shown is None:
            return f"History: nothing recorded yet   {KEYS_NOTE}"
        run_min = (span[1] - span[0]) / 60
        lo, hi = ((t - span[0]) / 60 for t in shown)
        return (
            f"History: {self.view.label()}, minutes {lo:.1f} to {hi:.1f} of {run_min:.1f}"
            f"   {KEYS_NOTE}"
        )

    def _plot(
        self,
        pid: str,
        title: str,
        lines: Sequence[tuple[str, Thinned]],
        span: tuple[float, float] | None,
        shown: tuple[float, float] | None,
    ) -> None:
        widget = self.query_one(f"#{pid}", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        plt.title(title)
        plt.xlabel("minutes since start")
        if span is not None and shown is not None:
            lo, hi = ((t - span[0]) / 60 for t in shown)
            for label, series in lines:
                pts = decimate(window(series.points(), *shown), max(widget.size.width, 40))
                if pts:
                    xs = [(x - span[0]) / 60 for x, _ in pts]
                    plt.plot(xs, [y for _, y in pts], label=label if len(lines) > 1 else None)
            plt.xlim(lo, hi if hi > lo else lo + 1)
        widget.refresh()
