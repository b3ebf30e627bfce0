"""One GPU: role, name, utilisation and memory with history, temperature, power, the
processes on it with their owner, and its labels as chips with how long each has held.

A panel is not a widget: it keeps its GPU's readings and makes its box as rows of Text
(``rows``), which the grid's board (tui/app/gpus/board.py) lays side by side in one widget.
Eight panel widgets cost eight styles caches, borders and compositor cuts for every changed
row; one board costs one."""

from __future__ import annotations

from collections import deque

from rich import get_console
from rich.style import Style
from rich.text import Text

from dflash_tui.app.host.gpus.fit import PANEL_H
from dflash_tui.app.widgets.palette import Palette
from dflash_tui.app.widgets.spark import bar, sparkline
from dflash_tui.core.base.snapshot import Gpu
from dflash_tui.core.base.text import mib, mib_pair, safe_label
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.severity import OWNER as _OWNER_SEVERITY
from dflash_tui.core.diagnosis.severity import label_severity, worst
from dflash_tui.core.diagnosis.views import GpuView, ProcView

_BAR = 8
# Readings of utilisation and memory kept per GPU: what its sparklines draw, no more. A longer
# window made a panel whose readings stand (an idle card, one the machine lacks) again every
# sample until the whole window held one reading, though the cells drawn had stopped moving.
HISTORY = 7
# The box of each state, as Textual draws its borders: (top, side, bottom) characters.
_ROUND = (("╭", "─", "╮"), "│", ("╰", "─", "╯"))
_HEAVY = (("┏", "━", "┓"), "┃", ("┗", "━", "┛"))
_DOUBLE = (("╔", "═", "╗"), "║", ("╚", "═", "╝"))
_DIM = Style(dim=True)  # the last known readings while no sample comes: greyed


def held(seconds: float) -> str:
    """How long a label has held, for its chip: ``40s``, ``6m``, ``1h05m``, rounded down
    (``duration``'s coarse steps: a panel whose readings stand redraws at most every 10 s,
    then once a minute)."""
    return duration(seconds, coarse=True)


def _short_name(name: str | None) -> str:
    return safe_label((name or "?").replace("NVIDIA ", "").replace("GeForce ", ""), 16)


def _push(hist: deque[float | None], value: float | None) -> bool:
    """Append ``value``; False when that left the window as it was (full, and every reading
    in it ``value``: a sparkline that draws the same)."""
    full = len(hist) == hist.maxlen
    steady = full and hist[-1] == value and hist.count(value) == len(hist)
    hist.append(value)
    return not steady


class GpuPanel:
    """A GpuView and its own short history for the sparklines; ``rows`` draws them."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.util_hist: deque[float | None] = deque(maxlen=HISTORY)
        self.mem_hist: deque[float | None] = deque(maxlen=HISTORY)
        self.view: GpuView | None = None
        self.now = 0.0
        self.run_active = False
        self.since: dict[str, float] = {}
        self.stale_s: int | None = None  # no sample for this long: the panel shows old data
        self.picked = False  # a GPU of the finding entered last (enter or a click on it)
        self.shown: list[Text] = []  # the rows the board drew last (none: never drawn)
        self._made: tuple[tuple[int, int, int, tuple[str, ...]], list[Text]] | None = None
        self._version = 0  # bumped by every change to what the rows show

    def remember(self, gpu: Gpu | None) -> bool:
        """One reading into the sparklines (None: the GPU was not there); True when that
        changed what they draw."""
        frac = None
        if gpu and gpu.mem_used_mib is not None and gpu.mem_total_mib:
            frac = 100.0 * gpu.mem_used_mib / gpu.mem_total_mib
        moved = _push(self.util_hist, gpu.util if gpu else None)
        moved = _push(self.mem_hist, frac) or moved
        if moved:
            self._version += 1
        return moved

    def forget(self) -> None:
        """Drop the sparklines and the labels' start times (a replay jumped elsewhere)."""
        self.util_hist.clear()
        self.mem_hist.clear()
        self.since = {}
        self._version += 1

    def show(self, view: GpuView, now: float, run_active: bool) -> None:
        """One sample into the panel (the board draws it when its host is on screen)."""
        before = (self.view, self.run_active, self.since)
        moved = self.remember(view.gpu)
        self.view, self.now, self.run_active = view, now, run_active
        # The diagnosis looks back about a minute; remember since when each label has held
        # without a break, so "idle 6m00s" stays true past that window.
        self.since = {
            lb.code: min(lb.since, self.since.get(lb.code, lb.since)) for lb in view.labels
        }
        # A GPU whose readings stand (an idle card, one in the topology the machine lacks)
        # keeps its box: ``rows`` makes it again only for a change, or its chips' next step
        # (ten seconds in a label's first minute, then a minute).
        if not moved and (view, run_active, self.since) != before:
            self._version += 1

    def show_stale(self, age: int | None) -> bool:
        """No sample for ``age`` seconds (None: fresh); True when that changed the panel."""
        if age == self.stale_s:
            return False
        self.stale_s = age
        self._version += 1
        return True

    def pick(self, picked: bool) -> bool:
        """Mark the panel (or not); True when that changed it."""
        if picked == self.picked:
            return False
        self.picked = picked
        self._version += 1
        return True

    def held_for(self, code: str, since: float, at_least: bool = False) -> str:
        """How long label ``code`` has held without a break, as its chip says it; ``>= 10s``
        when it held before the first sample (its start is not known)."""
        return (">= " if at_least else "") + held(self.now - self.since.get(code, since))

    def worst(self) -> str:
        if self.view is None:
            return "info"
        return worst(label_severity(c, self.run_active) for c in self.view.codes) or "info"

    def render(self) -> Text:
        """The rows the board drew last, as one Text (empty when never drawn)."""
        return Text("\n").join(self.shown)

    def rows(self, pal: Palette, width: int) -> list[Text]:
        """The panel's box, ``PANEL_H`` rows of exactly ``width`` cells; the same list while
        nothing it shows changed (the board repaints only the panels whose rows are new)."""
        times = self._chip_times()
        key = (self._version, id(pal), width, times)
        if self._made is not None and self._made[0] == key:
            return self._made[1]
        rows = self._box(pal, max(5, width), times)
        self._made = (key, rows)
        return rows

    def _chip_times(self) -> tuple[str, ...]:
        """How long each label has held, as the chips say it (what ``now`` changes)."""
        labels = self.view.labels if self.view is not None else ()
        return tuple(self.held_for(lb.code, lb.since, lb.at_least) for lb in labels)

    def _box(self, pal: Palette, width: int, times: tuple[str, ...]) -> list[Text]:
        view = self.view
        (tl, h, tr), side, (bl, bh, br) = self._frame()
        frame = self._frame_style(pal)
        inner = width - 3  # the sides and one cell of padding on the left
        body = self._body(view, pal, times) if view is not None else []
        content = fit_rows(body, inner, PANEL_H - 2)
        top = Text(tl + h, frame, end="")
        title = self._title(view, pal)
        if title is not None:
            title.truncate(width - 5, overflow="ellipsis")
            top.append(" ")
            top.append_text(title)
            top.append(" ")
        top.append(h * (width - 1 - top.cell_len) + tr, frame)
        out = [top]
        for row in content:
            line = Text(side, frame, end="")
            line.append(" ")
            if self.stale_s is not None:
                row.stylize(_DIM)
            line.append_text(row)
            line.append(side, frame)
            out.append(line)
        out.append(_bottom(self._subtitle(), bl, bh, br, frame, width))
        return out

    def _frame(self) -> tuple[tuple[str, str, str], str, tuple[str, str, str]]:
        if self.stale_s is not None:
            return _ROUND
        if self.picked:
            return _DOUBLE
        return _HEAVY if self.worst() == "error" else _ROUND

    def _frame_style(self, pal: Palette) -> Style:
        if self.stale_s is not None:
            return pal.fg("muted")
        if self.picked:
            return Style(color=pal.accent)
        sev = self.worst()
        return pal.fg(sev) if sev in ("error", "warning", "ok") else pal.fg("muted")

    def _title(self, view: GpuView | None, pal: Palette) -> Text | None:
        if view is None:
            return None
        name = _short_name(view.gpu.name if view.gpu else "not present")
        if self.stale_s is not None:  # its label durations stopped with the last sample
            return Text(
                f"GPU {view.index} stale {duration(self.stale_s)} {name}", pal.fg("warning")
            )
        style = Style(color=pal.accent) if self.picked else ""
        return Text(f"GPU {view.index} {view.role} {name}", style)

    def _subtitle(self) -> str | None:
        gpu = self.view.gpu if self.view is not None else None
        if gpu is None:
            return None
        used = mib_pair(gpu.mem_used_mib, gpu.mem_total_mib)
        temp = f"{gpu.temp_c}°C" if gpu.temp_c is not None else "-°C"
        power = f"{gpu.power_w:.0f}W" if gpu.power_w is not None else "-W"
        return f"{used} {temp} {power}"

    def _body(self, view: GpuView, pal: Palette, times: tuple[str, ...]) -> list[Text]:
        """The panel's lines: meters, chips (``times``: each label's held time, as
        ``_chip_times`` says it), processes."""
        gpu = view.gpu
        if gpu is None:
            lines = [Text("in the topology, not on this machine", pal.fg("error"))]
        else:
            mem_pct = self.mem_hist[-1] if self.mem_hist else None
            lines = [
                self._meter("util", gpu.util, self.util_hist, pal),
                self._meter("mem ", mem_pct, self.mem_hist, pal),
            ]
        lines.append(self._chips(view, pal, times))
        lines.extend(self._procs(view.processes, pal))
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
        out = Text(f"{name} ")
        out.append(bar(frac, _BAR), pal.fg(sev))
        out.append(" ---% " if pct is None else f" {pct:3.0f}% ")
        out.append(sparkline(hist, HISTORY, 0.0, 100.0), pal.fg("info"))
        return out

    def _chips(self, view: GpuView, pal: Palette, times: tuple[str, ...]) -> Text:
        out = Text()
        for i, (label, since) in enumerate(zip(view.labels, times, strict=True)):
            out.append(" " if i else "")
            out.append(
                f" {label.code} {since} ", pal.chip(label_severity(label.code, self.run_active))
            )
        return out

    def _procs(self, procs: tuple[ProcView, ...], pal: Palette) -> list[Text]:
        if not procs:
            return [Text("no processes", pal.fg("muted"))]
        shown = procs[:2] if len(procs) <= 2 else procs[:1]
        lines = []
        for p in shown:
            pid = f"{p.pid}→{p.container_pid}" if p.container_pid is not None else str(p.pid)
            out = Text(f"{pid} {safe_label(p.name.rsplit('/', 1)[-1], 12)} {mib(p.used_mib)} ")
            out.append(p.owner, pal.fg(_OWNER_SEVERITY.get(p.owner, "info"), bold=True))
            lines.append(out)
        if len(procs) > len(shown):
            lines.append(Text(f"+{len(procs) - len(shown)} more processes", pal.fg("muted")))
        return lines


def fit_rows(lines: list[Text], width: int, height: int) -> list[Text]:
    """``lines`` wrapped at word breaks to ``width`` cells (a word too long is folded, a
    piece still too wide is cut with an ellipsis), each padded to ``width``; the first
    ``height`` rows, blank rows after the last."""
    rows: list[Text] = []
    for line in lines:
        pieces = [line]
        if line.cell_len > width:
            # Rich's word wrap; "default" justification leaves the padding to the loop below.
            pieces = list(
                line.wrap(get_console(), width, justify="default", overflow="fold", no_wrap=False)
            )
            for piece in pieces[:-1]:
                piece.rstrip()  # the space a line breaks at is not drawn
        for piece in pieces:
            piece.end = ""
            while piece.cell_len > width and piece.plain.endswith(" "):
                piece.right_crop(1)  # a closing space past the width is not a cut word
            piece.truncate(width, overflow="ellipsis", pad=True)
            rows.append(piece)
        if len(rows) >= height:
            break
    rows = rows[:height]
    rows.extend(Text(" " * width, end="") for _ in range(height - len(rows)))
    return rows


def _bottom(sub: str | None, bl: str, h: str, br: str, frame: Style, width: int) -> Text:
    """The bottom border with ``sub`` at its right, as Textual draws a border subtitle."""
    if sub is None:
        return Text(bl + h * (width - 2) + br, frame, end="")
    label = Text(f" {sub} ", end="")
    label.truncate(width - 3, overflow="ellipsis")
    out = Text(bl + h * (width - 2 - label.cell_len - 1), frame, end="")
    out.append_text(label)
    out.append(h + br, frame)
    return out
