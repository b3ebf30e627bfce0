"""The History tab's widget. ``HistoryView`` owns one host's ``RunHistory`` and how it is drawn
(as Posting's panes own their display): the pane hands it every sample, it keeps the history
while hidden and plots only while shown, at most every HISTORY_REDRAW_S seconds and with at most
one point per column of each plot (a bucket's lowest and highest per two columns). plotext's
build is slow (about 0.1 s a plot of 8 lines on a loaded 2-core machine, bench/history_steps.py)
so it runs in a thread worker on fresh Plot objects; the widgets show the text it returns.

Plots are textual-plotext's: plotext renders ANSI text that Rich reads as ANSI, never as
markup. Their text (titles, axis labels, legends) is this module's own words and numbers, with
GPU indexes; nothing read from the host (a GPU's name, a path) reaches them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from dflash_tui.app.host.store import PaneStore
from dflash_tui.app.widgets.themed import follow_theme, unfollow_theme
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.base.timings import HISTORY_REDRAW_S
from dflash_tui.core.diagnosis.history import RunHistory, Series, View, decimate, window

if TYPE_CHECKING:  # plotext is imported when the tab is first shown (history/plot.py)
    from textual_plotext.plot import Plot

    from dflash_tui.app.host.history.plot import HistoryPlot

# (id, title, y label) of each plot; the GPU plots have one line per GPU.
RUN_PLOTS = (("plot-loss", "loss", "loss"), ("plot-toks", "tok/s", "tok/s"))
GPU_PLOTS = (
    ("plot-util", "GPU utilisation %", "util"),
    ("plot-power", "GPU power W", "power"),
    ("plot-mem", "GPU memory used %", "mem"),
)
# Its keys work, and show in the footer and help, only while the tab is shown (the app's
# check_action; the bindings are the main screen's, tui/app/screens/main.py).
KEYS_NOTE = "z zoom (whole run / 1 h / 5 min)   < > pan"


def build(jobs: Sequence[tuple[HistoryPlot, Plot, tuple[int, int], str]]) -> list[Text]:
    """Runs in a thread: each fresh Plot built at its size and theme (nothing shared)."""
    out = []
    for _widget, plt, (w, h), theme in jobs:
        plt.plotsize(w, h)
        # plotsize cuts the plot to the terminal size plotext read when the Plot was made
        # (shutil's: COLUMNS/LINES, else 80x24 without a TTY). Served in a browser that size is
        # the browser's at start (textual-serve sets COLUMNS), so a grown window's plots would
        # be cut. plotext lifts that cut only on its global figure (plotext.limit_size); a
        # Plot of its own has no public way, so its size is set again under the cut, as
        # textual-plotext's PlotextPlot.render does, with plotext's private _set_size
        # (tests/functional/test_app_history.py fails if a plotext release changes it).
        plt._set_size(w, h)
        plt.theme(theme)
        out.append(Text.from_ansi(plt.build()))
    return out


class HistoryView(Vertical):
    """One host's History tab (id ``history``)."""

    DEFAULT_CSS = """
    HistoryView { height: 1fr; }
    HistoryView #history-title { height: 1; padding: 0 1; }
    HistoryView Horizontal { height: 1fr; }
    """

    def __init__(self, kept: PaneStore) -> None:
        """``kept``: the host's store, which folds every sample into its history whether
        this tab is shown or not (tui/app/host/store.py)."""
        super().__init__(id="history")
        self.kept = kept
        self.view = View()
        self.plotted = -1  # the store's sample count at the last plot
        self.building = 0  # builds started and not yet shown (and the plots' mount)
        self.plots: str | None = None  # None, then "mounting", then "ready" (or "failed")
        self.plot_error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="history-title", markup=False)
        yield Horizontal(id="history-run")
        yield Horizontal(id="history-gpus")

    def on_mount(self) -> None:
        self.replot()
        self.set_interval(HISTORY_REDRAW_S, self._redraw)

    async def _mount_plots(self) -> None:
        """The plots, when the tab is first shown: plotext (about 2 MiB) is imported then,
        not by a session that never opens the tab."""
        try:
            from dflash_tui.app.host.history.plot import HistoryPlot

            run = [HistoryPlot(id=p) for p, _, _ in RUN_PLOTS]
            gpus = [HistoryPlot(id=p) for p, _, _ in GPU_PLOTS]
            await self.query_one("#history-run").mount_all(run)
            await self.query_one("#history-gpus").mount_all(gpus)
        except Exception as exc:  # the tab says so; never blank and silent
            error = terminal_safe(f"{type(exc).__name__}: {exc}", visible=False)
            self.plots, self.plot_error = "failed", error
            self.building -= 1
            self.replot()
            return
        self.call_after_refresh(self._plots_ready)  # laid out: they have their sizes

    def on_unmount(self) -> None:
        unfollow_theme(self)  # a removed pane's History must not stay held by the theme signal

    def _plots_ready(self) -> None:
        self.plots = "ready"
        # After the plots' own subscriptions (they mounted first): they register the theme.
        follow_theme(self, self.replot)
        self.replot()
        self.building -= 1  # the mount's, after the build it started counted itself

    @property
    def history(self) -> RunHistory:
        return self.kept.history

    @property
    def dirty(self) -> bool:
        """Samples arrived since the last plot (each is plotted at the next redraw while
        the tab is shown)."""
        return self.plotted != self.kept.samples

    def mark_dirty(self) -> None:
        self.plotted = -1

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
        self.plotted = self.kept.samples
        span = self.history.span()
        shown = self.view.bounds(span)
        self.query_one("#history-title", Static).update(Text(self.title(span, shown)))
        if not self.shown:  # hidden, or not laid out yet: built when shown
            self.mark_dirty()
            return
        if self.plots is None:  # the first time shown: the plots are made, then built
            self.plots = "mounting"
            self.building += 1
            self.run_worker(self._mount_plots(), group="history-plots", exit_on_error=False)
            return
        if self.plots != "ready":
            return  # _plots_ready builds them; a failure is in the title
        h = self.history
        jobs = [
            self._plot("plot-loss", "loss", [("loss", h.loss)], span, shown),
            self._plot("plot-toks", "tok/s", [("tok/s", h.tok_s)], span, shown),
        ]
        gpus = sorted(h.gpus.items())
        for pid, title, attr in GPU_PLOTS:
            lines = [(f"GPU {i}", getattr(g, attr)) for i, g in gpus]
            jobs.append(self._plot(pid, title, lines, span, shown))
        self.building += 1
        self.run_worker(
            lambda: self._build(jobs), thread=True, group="history", exit_on_error=False
        )

    def _build(self, jobs: list[tuple[HistoryPlot, Plot, tuple[int, int], str]]) -> None:
        texts = None
        try:
            texts = build(jobs)
        finally:
            with contextlib.suppress(RuntimeError):  # the app has gone meanwhile
                self.app.call_from_thread(self._built, jobs, texts)

    def on_resize(self) -> None:
        if self.shown:
            self.replot()

    def _built(
        self, jobs: list[tuple[HistoryPlot, Plot, tuple[int, int], str]], texts: list[Text] | None
    ) -> None:
        self.building -= 1
        for (widget, _plt, size, _theme), text in zip(jobs, texts or [], strict=False):
            widget.show(text, size)

    def title(self, span: tuple[float, float] | None, shown: tuple[float, float] | None) -> str:
        if self.plot_error is not None:
            return f"History: the plots could not be made ({self.plot_error})"
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
        lines: Sequence[tuple[str, Series]],
        span: tuple[float, float] | None,
        shown: tuple[float, float] | None,
    ) -> tuple[HistoryPlot, Plot, tuple[int, int], str]:
        """The plot's data on a fresh Plot, with what its build needs (size, theme)."""
        from textual_plotext.plot import Plot

        from dflash_tui.app.host.history.plot import HistoryPlot

        widget = self.query_one(f"#{pid}", HistoryPlot)
        plt = Plot()
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
        return widget, plt, (widget.size.width, widget.size.height), widget.theme_name()
