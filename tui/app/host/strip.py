"""The host strip under the metrics: host RAM, swap and the free space of the run's
filesystems, coloured by the thresholds the findings use; and, from the pipeline's heartbeats,
its workers as one row (role, index, GPU, step), the one behind marked as ``worker-stalled``
says it. Hidden while the probe sends neither (an older probe, a replayed recording).

The renderers are pure (data and a Palette in, Rich Text out) and tested without a terminal.
Each field has a long and a short form; the header's ``fit`` shortens the least important
first when the strip is narrow."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from dflash_tui.app.host.header import Part, fit, part
from dflash_tui.app.widgets.palette import Palette
from dflash_tui.app.widgets.themed import Themed, show_changed
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.host_view import (
    HostPart,
    WorkerView,
    host_parts,
    worker_label,
    worker_views,
)
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.views import Diagnosis

# How soon each reading is shortened when the strip is narrow (lower: sooner).
_RANK = {"ram": 60, "disk": 50, "swap": 40, "oom": 30}


def host_line(parts: Sequence[HostPart], pal: Palette, width: int = 0) -> Text:
    """``host RAM 1.8 TiB available of 2.0 TiB (90 %) · swap none · run root ...``: when
    narrow, short forms, then only RAM and the run root's filesystem."""
    out: list[Part] = [part("host ", pal.fg("muted"), 20, "")]
    for i, p in enumerate(parts):
        style = pal.fg(p.level, bold=True) if p.level != "ok" else ""
        mark = " LOW" if p.level != "ok" else ""  # the meaning without colour too
        sep = " · " if i else ""
        forms = [Text(sep, pal.fg("muted")) for _ in range(3)]
        for form, body in zip(forms, (p.text, p.short), strict=False):
            form.append(body + mark, style)
        first_disk = p.what == "disk" and not any(x.what == "disk" for x in parts[:i])
        if p.what == "ram" or first_disk:
            forms.pop()  # never left out
        else:
            forms[-1] = Text("")
        out.append(
            Part(forms, _RANK.get(p.what, 30) - (0 if first_disk or p.what != "disk" else 25))
        )
    return fit(out, width)


def _cell(v: WorkerView, pal: Palette, level: int) -> Text:
    """A worker at one of three lengths: ``T0@g0 s812``, ``T0 s812``, ``T0``; the one behind
    always with its GPU, step and how long."""
    w = v.worker
    label = worker_label(w)
    step = f" s{w.step}" if w.step is not None else " s-"
    if v.behind:
        return Text(f" {label}{step} BEHIND {duration(v.stalled_s or 0)} ", pal.chip("error"))
    short = label.split("@")[0]
    body = (f"{label}{step}", f"{short}{step}", short)[level]
    return Text(f" {body}", pal.fg("muted") if v.waiting else "")


def workers_text(views: Sequence[WorkerView], pal: Palette, width: int = 0) -> Text:
    """``workers  L s812  T0@g0 s812 ... D1@g6 s800 BEHIND 1m30s  D2@g7 s800``: working ones
    plain, waiting ones muted, the one behind on a red chip with how long. Narrow: every cell
    shortened alike (GPU, then step), never the one behind."""
    behind = any(v.behind for v in views)
    for level in range(3):
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        if level == 0:
            t.append("workers", pal.fg("muted"))
        for v in views:
            t.append_text(_cell(v, pal, level))
        if not behind and level == 0:
            t.append("  none behind", pal.fg("ok"))
        if not width or t.cell_len <= width:
            break
    return t


class HostStrip(Static, Themed):
    DEFAULT_CSS = """
    HostStrip {
        height: auto; max-height: 2; padding: 0 1; background: $surface;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="host-strip")
        self.diag: Diagnosis | None = None
        self.progress: Progress | None = None

    def on_mount(self) -> None:
        self.redraw()

    def show(self, diag: Diagnosis, progress: Progress | None) -> None:
        self.diag, self.progress = diag, progress
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        d = self.diag
        parts = host_parts(d.machine, d.thresholds) if d is not None else []
        views = worker_views(d.workers, d.time, d.thresholds, self.progress) if d else []
        self.display = bool(parts or views)
        if not self.display:
            return
        width, pal = self.size.width, self.palette
        lines = []
        if parts:
            lines.append(host_line(parts, pal, width))
        if views:
            lines.append(workers_text(views, pal, width))
        show_changed(self, Text("\n", end="").join(lines))
