"""One line per GPU (the grid's compact mode): index, role, util and memory bars, temperature,
power, label chips with how long each has held, and the top process by GPU memory.

A line draws what its GPU's panel holds (the panel keeps the readings, the labels' start
times and the stale state), so switching modes loses nothing and the panel's update path
stays the only one."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from dflash_tui.app.host.gpus.panel import GpuPanel
from dflash_tui.app.widgets.palette import Palette
from dflash_tui.app.widgets.spark import bar
from dflash_tui.app.widgets.themed import Themed, show_changed
from dflash_tui.core.base.text import mib, safe_label
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.severity import OWNER as _OWNER_SEVERITY
from dflash_tui.core.diagnosis.severity import label_severity

_BAR = 5
_ROLE = {"target": "target ", "drafter": "drafter", "unassigned": "-      "}


class GpuLine(Static, Themed):
    """The compact line of ``panel``'s GPU (id ``gpu-line-<index>``)."""

    DEFAULT_CSS = """
    GpuLine { height: 1; }
    GpuLine.-stale { text-opacity: 55%; }
    GpuLine.-picked { background: $accent 30%; }
    """

    def __init__(self, panel: GpuPanel) -> None:
        super().__init__(id=f"gpu-line-{panel.index}", classes="gpu-line")
        self.panel = panel

    def redraw(self) -> None:
        self.set_class(self.panel.stale_s is not None, "-stale")
        self.set_class(self.panel.picked, "-picked")
        show_changed(self, line_text(self.panel, self.palette))


def line_text(panel: GpuPanel, pal: Palette) -> Text:
    """The panel's GPU on one line, cut with an ellipsis at the right."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    view = panel.view
    if view is None:
        return out
    sev = "muted" if panel.stale_s is not None else panel.worst()
    out.append(f"{view.index:>2} ", pal.fg(sev, bold=True))
    out.append(_ROLE.get(view.role, safe_label(view.role, 7)) + " ")
    gpu = view.gpu
    if gpu is None:
        out.append("in the topology, not on this machine ", pal.fg("error"))
    else:
        mem = panel.mem_hist[-1] if panel.mem_hist else None
        _meter(out, "util", gpu.util, pal, "ok")
        _meter(out, "mem", mem, pal, "error" if (mem or 0) >= 95 else "ok")
        out.append(f"{gpu.temp_c}°C " if gpu.temp_c is not None else "-°C ")
        out.append(f"{gpu.power_w:.0f}W " if gpu.power_w is not None else "-W ")
    if panel.stale_s is not None:
        out.append(f" stale {duration(panel.stale_s)} ", pal.chip("warning"))
        out.append(" ")
    for label in view.labels:
        since = panel.held_for(label.code, label.since, label.at_least)
        out.append(
            f" {label.code} {since} ", pal.chip(label_severity(label.code, panel.run_active))
        )
        out.append(" ")
    if view.processes:
        top = max(view.processes, key=lambda p: p.used_mib or 0)
        pid = f"{top.pid}→{top.container_pid}" if top.container_pid is not None else top.pid
        name = safe_label(top.name.rsplit("/", 1)[-1], 16)
        out.append(f"{pid} {name} {mib(top.used_mib)} ")
        out.append(top.owner, pal.fg(_OWNER_SEVERITY.get(top.owner, "info"), bold=True))
        if len(view.processes) > 1:
            out.append(f" +{len(view.processes) - 1}", pal.fg("muted"))
    else:
        out.append("no processes", pal.fg("muted"))
    return out


def _meter(out: Text, name: str, pct: float | None, pal: Palette, sev: str) -> None:
    out.append(f"{name} ")
    out.append(bar(None if pct is None else pct / 100.0, _BAR), pal.fg(sev))
    out.append(" ---% " if pct is None else f" {pct:3.0f}% ")
