"""Training progress: step, loss, accuracy and tok/s from the run's log, with history plots."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from dflash_tui.app.widgets.spark import sparkline
from dflash_tui.app.widgets.themed import Themed, show_changed
from dflash_tui.core.base.text import si
from dflash_tui.core.diagnosis.progress import Metric, Progress

_SPARK = 24


def fmt_value(value: float | None, *, si_units: bool = False) -> str:
    """A metric for the strip: ``-`` when unknown, ``nan``/``inf``/``-inf`` literally (a
    diverging loss must read as such), else 3 decimals or, with ``si_units``, ``2.8K``."""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)  # 'nan', 'inf', '-inf'
    return si(value) if si_units else f"{value:.3f}"


class MetricsStrip(Static, Themed):
    DEFAULT_CSS = """
    MetricsStrip {
        height: 2; padding: 0 1; background: $surface; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="metrics")
        self.progress = Progress()
        self.history: list[tuple[float, Metric]] = []

    def on_mount(self) -> None:
        self.redraw()

    def show(self, progress: Progress, history: Sequence[tuple[float, Metric]]) -> None:
        self.progress, self.history = progress, list(history)[-200:]
        self.redraw()

    def redraw(self) -> None:
        pal = self.palette
        p, last = self.progress, self.progress.last
        t = Text(no_wrap=True, overflow="ellipsis")
        if last is None:
            t.append("metrics: no step lines yet (step=… loss=… tok/s=…)", pal.fg("muted"))
            show_changed(self, t)
            return
        t.append("step ", pal.fg("muted"))
        t.append(f"{p.last_step if p.last_step is not None else '-'}", pal.fg("info", bold=True))
        for name, value in (("loss", last.loss), ("acc", last.acc)):
            t.append(f"  {name} ", pal.fg("muted"))
            t.append(fmt_value(value), pal.fg("info", bold=True))
        t.append("  tok/s ", pal.fg("muted"))
        t.append(fmt_value(last.tok_s, si_units=True), pal.fg("ok", bold=True))
        toks = [m.tok_s for _, m in self.history]
        loss = [m.loss for _, m in self.history]
        t.append("\ntok/s ", pal.fg("muted"))
        t.append(sparkline(toks, _SPARK, lo=0.0), pal.fg("ok"))
        t.append("  loss ", pal.fg("muted"))
        t.append(sparkline(loss, _SPARK, lo=None), pal.fg("warning"))
        show_changed(self, t)
