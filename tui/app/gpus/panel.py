"""One GPU: role, name, utilisation and memory with history, temperature, power, the
processes on it with their owner, and its labels as chips with how long each has held."""

from __future__ import annotations

from collections import deque

from rich.style import Style
from rich.text import Text

from dflash_tui.app.palette import Palette
from dflash_tui.app.rows import RowStatic
from dflash_tui.app.spark import bar, sparkline
from dflash_tui.app.widgets import Themed, set_border_changed
from dflash_tui.core.base.snapshot import Gpu
from dflash_tui.core.base.text import mib, mib_pair, safe_label
from dflash_tui.core.diagnosis.diagnose import GpuView, ProcView
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.severity import LEVELS, label_severity, worst
from dflash_tui.core.diagnosis.severity import OWNER as _OWNER_SEVERITY

HISTORY = 60  # samples of utilisation and memory kept per GPU for the sparklines
_BAR, _SPARK = 8, 7


def held(seconds: float) -> str:
    """How long a label has held, for its chip: ``42s``, ``6m``, ``1h05m``, rounded down
    (``duration``'s whole minutes: a panel whose readings stand redraws once a minute)."""
    return duration(seconds, whole_minutes=True)


def _short_name(name: str | None) -> str:
    return safe_label((name or "?").replace("NVIDIA ", "").replace("GeForce ", ""), 16)


class GpuPanel(RowStatic, Themed):
    """Renders a GpuView; keeps its own short history for the sparklines."""

    DEFAULT_CSS = """
    GpuPanel {
        height: 7;
        border: round $foreground 35%;
        border-title-color: $foreground;
        border-subtitle-color: $foreground 80%;
        padding: 0 1;
        &.-error { border: heavy $error; }
        &.-warning { border: round $warning; }
        &.-ok { border: round $success 70%; }
        /* The GPUs of the finding entered last (enter or a click in the findings). */
        &.-picked { border: double $accent; border-title-color: $accent; }
        /* The last known readings while no sample comes: greyed, whatever their level. */
        &.-stale { border: round $foreground 25%; text-opacity: 55%; border-title-color: $warning; }
    }
    """

    def __init__(self, index: int) -> None:
        super().__init__(id=f"gpu-{index}", classes="gpu-panel")
        self.index = index
        self.util_hist: deque[float | None] = deque(maxlen=HISTORY)
        self.mem_hist: deque[float | None] = deque(maxlen=HISTORY)
        self.view: GpuView | None = None
        self.now = 0.0
        self.run_active = False
        self.since: dict[str, float] = {}
        self.stale_s: int | None = None  # no sample for this long: the panel shows old data

    def remember(self, gpu: Gpu | None) -> None:
        """One reading into the sparklines (None: the GPU was not there)."""
        self.util_hist.append(gpu.util if gpu else None)
        frac = None
        if gpu and gpu.mem_used_mib is not None and gpu.mem_total_mib:
            frac = 100.0 * gpu.mem_used_mib / gpu.mem_total_mib
        self.mem_hist.append(frac)

    def forget(self) -> None:
        """Drop the sparklines and the labels' start times (a replay jumped elsewhere)."""
        self.util_hist.clear()
        self.mem_hist.clear()
        self.since = {}

    def show(self, view: GpuView, now: float, run_active: bool, draw: bool = True) -> None:
        """One sample into the panel; ``draw`` False: kept (sparklines, labels' start times)
        but not drawn (a host not on screen draws its latest when shown)."""
        self.remember(view.gpu)
        self.view, self.now, self.run_active = view, now, run_active
        # The diagnosis looks back about a minute; remember since when each label has held
        # without a break, so "idle 6m00s" stays true past that window.
        self.since = {
            lb.code: min(lb.since, self.since.get(lb.code, lb.since)) for lb in view.labels
        }
        if draw:
            self.redraw()

    def show_stale(self, age: int | None) -> None:
        if age != self.stale_s:
            self.stale_s = age
            self.redraw()

    def held_for(self, code: str, since: float) -> str:
        """How long label ``code`` has held without a break, as its chip says it."""
        return held(self.now - self.since.get(code, since))

    def worst(self) -> str:
        if self.view is None:
            return "info"
        return worst(label_severity(c, self.run_active) for c in self.view.codes) or "info"

    def redraw(self) -> None:
        view = self.view
        if view is None:
            return
        gpu = view.gpu
        name = _short_name(gpu.name if gpu else "not present")
        title = Text(f"GPU {view.index} {view.role} {name}")
        if self.stale_s is not None:  # its label durations stopped with the last sample
            title = Text(f"GPU {view.index} stale {duration(self.stale_s)} {name}")
        subtitle = None
        if gpu is not None:
            used = mib_pair(gpu.mem_used_mib, gpu.mem_total_mib)
            temp = f"{gpu.temp_c}°C" if gpu.temp_c is not None else "-°C"
            power = f"{gpu.power_w:.0f}W" if gpu.power_w is not None else "-W"
            subtitle = Text(f"{used} {temp} {power}")
        set_border_changed(self, title, subtitle)
        stale = self.stale_s is not None
        for sev in LEVELS:
            self.set_class(self.worst() == sev and not stale, f"-{sev}")
        self.set_class(stale, "-stale")
        self.show_rows(self._body(view, self.palette))

    def _body(self, view: GpuView, pal: Palette) -> list[Text]:
        """The panel's lines: meters, chips, processes (each drawn only when it changed)."""
        gpu = view.gpu
        if gpu is None:
            lines = [_line("in the topology, not on this machine", pal.fg("error"))]
        else:
            mem_pct = self.mem_hist[-1] if self.mem_hist else None
            lines = [
                self._meter("util", gpu.util, self.util_hist, pal),
                self._meter("mem ", mem_pct, self.mem_hist, pal),
            ]
        lines.append(self._chips(view, pal))
        lines.extend(self._procs(view.processes, pal))
        lines[-1].rstrip()
        return lines

    def _meter(
        self,
        name: str,
        pct: float | None,
        hist: deque[float | None],
        pal: Palette,
    ) -> Text:
        frac = None if pct is None else pct / 100.0
        sev = "error" if (pct or 0) >= 95 and name == "mem " else "ok"
        out = _line(f"{name} ")
        out.append(bar(frac, _BAR), pal.fg(sev))
        out.append(" ---% " if pct is None else f" {pct:3.0f}% ")
        out.append(sparkline(hist, _SPARK, 0.0, 100.0), pal.fg("info"))
        return out

    def _chips(self, view: GpuView, pal: Palette) -> Text:
        out = _line()
        for i, label in enumerate(view.labels):
            since = self.held_for(label.code, label.since)
            out.append(" " if i else "")
            out.append(
                f" {label.code} {since} ", pal.chip(label_severity(label.code, self.run_active))
            )
        return out

    def _procs(self, procs: tuple[ProcView, ...], pal: Palette) -> list[Text]:
        if not procs:
            return [_line("no processes", pal.fg("muted"))]
        shown = procs[:2] if len(procs) <= 2 else procs[:1]
        lines = []
        for p in shown:
            pid = f"{p.pid}→{p.container_pid}" if p.container_pid is not None else str(p.pid)
            out = _line(f"{pid} {safe_label(p.name.rsplit('/', 1)[-1], 12)} {mib(p.used_mib)} ")
            out.append(p.owner, pal.fg(_OWNER_SEVERITY.get(p.owner, "info"), bold=True))
            lines.append(out)
        if len(procs) > len(shown):
            lines.append(_line(f"+{len(procs) - len(shown)} more processes", pal.fg("muted")))
        return lines


def _line(text: str = "", style: str | Style = "") -> Text:
    """One of a panel's lines: wrapped at the panel's width, cut with an ellipsis below."""
    return Text(text, style, no_wrap=False, overflow="ellipsis", end="")
