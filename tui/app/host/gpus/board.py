"""The GPU panels as one widget: each panel's box (tui/app/gpus/panel.py) laid side by side,
``columns`` across, row by row, drawn by RowStatic (only the screen rows that changed are
made and repainted, and of those only the columns of the panels that changed)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.geometry import Region

from dflash_tui.app.host.gpus.fit import PANEL_H
from dflash_tui.app.host.gpus.panel import GpuPanel
from dflash_tui.app.widgets.rows import RowStatic
from dflash_tui.app.widgets.themed import Themed, same_texts


class GpuBoard(RowStatic, Themed):
    """Draws the panels of ``panels`` (the grid's, by GPU index) in index order."""

    DEFAULT_CSS = """
    /* A row never wraps: the fit gives the board the width of its columns. */
    GpuBoard { height: auto; text-wrap: nowrap; text-overflow: clip; }
    """

    def __init__(self, panels: dict[int, GpuPanel]) -> None:
        super().__init__(id="gpu-board")
        self.panels = panels
        self.columns = 4
        self.column_width = 29
        self._order: list[int] = []
        self._columns_changed: dict[int, tuple[int, int]] = {}  # screen row -> x span
        # Per row of panels (its first panel's place): its lines, kept while every panel in
        # it gives the rows it drew last (an idle card, a GPU the machine lacks).
        self._groups: dict[int, list[Text]] = {}

    def place(self, columns: int, column_width: int) -> None:
        """Lay the panels out ``columns`` across, each ``column_width`` cells wide (drawn by
        the next ``draw``)."""
        if (columns, column_width) != (self.columns, self.column_width):
            self.columns, self.column_width = max(1, columns), max(5, column_width)
            self._order = []  # every panel moves

    def box(self, index: int) -> Region | None:
        """Where GPU ``index``'s panel is, in the board's own cells; None if it has none."""
        return self.boxes((index,)).get(index)

    def boxes(self, indices: Iterable[int]) -> dict[int, Region]:
        """Where each of these GPUs' panels is, in the board's own cells (those with one)."""
        place = {i: at for at, i in enumerate(sorted(self.panels))}
        out = {}
        for index in indices:
            if index in place:
                row, col = divmod(place[index], self.columns)
                out[index] = Region(
                    col * self.column_width, row * PANEL_H, self.column_width, PANEL_H
                )
        return out

    def redraw(self) -> None:  # the theme changed: every panel's colours
        self.draw()

    def draw(self) -> None:
        """Every panel's latest rows: those that changed are repainted, nothing else."""
        pal, width = self.palette, self.column_width
        order = sorted(self.panels)
        moved = order != self._order  # a GPU came or went: the panels after it move
        self._order = order
        lines: list[Text] = []
        self._columns_changed = {}
        if moved:
            self._groups = {}
        for first in range(0, len(order), self.columns):
            group = [self.panels[i] for i in order[first : first + self.columns]]
            made = [p.rows(pal, width) for p in group]
            kept = self._groups.get(first)
            if kept is not None and all(r is p.shown for p, r in zip(group, made, strict=True)):
                lines.extend(kept)  # the same lines: RowStatic keeps their strips
                continue
            changed = [
                x
                for x, (p, rows) in enumerate(zip(group, made, strict=True))
                if rows is not p.shown and not same_texts(rows, p.shown)
            ]
            if changed and not moved:
                span = (changed[0] * width, (changed[-1] + 1) * width)
                for y in range(len(lines), len(lines) + PANEL_H):
                    self._columns_changed[y] = span
            for panel, rows in zip(group, made, strict=True):
                panel.shown = rows
            group_lines = []
            for y in range(PANEL_H):
                line = Text(end="", no_wrap=True)
                for rows in made:
                    line.append_text(rows[y])
                group_lines.append(line)
            self._groups[first] = group_lines
            lines.extend(group_lines)
        for first in [f for f in self._groups if f >= len(order)]:
            del self._groups[first]  # a row of panels no more
        self.show_rows(lines)

    def repaint(self, y: int, count: int, width: int) -> None:
        """Rows ``y`` to ``y + count``: only the columns of the panels that changed there."""
        spans = [self._columns_changed.get(row) for row in range(y, y + count)]
        if None in spans:  # a row whose panels moved or were never drawn: all of it
            super().repaint(y, count, width)
            return
        start = min(s[0] for s in spans)  # type: ignore[index]
        end = max(s[1] for s in spans)  # type: ignore[index]
        self.refresh(Region(start, y, min(end, width) - start, count))
