"""The GPU grid: a panel per GPU (four across at 120 columns, eight at 240, two rows visible,
then scroll), all drawn by one board widget (tui/app/host/gpus/board.py), or one line per GPU when
eight panels do not fit (tui/app/host/gpus/fit.py); ``c`` switches between the two."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.events import Resize
from textual.geometry import Region
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from dflash_tui.app.host.gpus.board import GpuBoard
from dflash_tui.app.host.gpus.compact import GpuLine
from dflash_tui.app.host.gpus.fit import GridFit, fit_grid
from dflash_tui.app.host.gpus.panel import GpuPanel
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.views import Diagnosis


class GpuGrid(ScrollableContainer, can_focus=True):
    """Draws the panels its host's store keeps (and a compact line for each), adding and
    dropping lines as GPUs appear; never rebuilds the ones it has."""

    DEFAULT_CSS = """
    GpuGrid {
        layout: vertical;
        height: auto;
        max-height: 14;
        overflow-y: auto;
        /* fit.py takes this column from the panels when the grid scrolls. */
        scrollbar-size-vertical: 1;
        &:focus { background-tint: $foreground 4%; }
        #no-gpus { height: 1; color: $text-muted; }
        GpuLine { display: none; }
        &.-compact GpuBoard, &.-empty GpuBoard { display: none; }
        &.-compact GpuLine { display: block; }
    }
    """

    def __init__(self, panels: dict[int, GpuPanel]) -> None:
        """``panels``: the host's GPUs as its store keeps them (tui/app/host/store.py)."""
        super().__init__(id="gpus", classes="-empty")  # no GPU until the first sample
        self.panels = panels
        # The compact lines are made the first time the grid is compact (most screens never
        # are: eight widgets fewer), then kept in step with the panels as the board is.
        self.lines: dict[int, GpuLine] = {}
        self.lines_made = False
        self.board = GpuBoard(self.panels)
        self.choice: bool | None = None  # compact chosen by the key; None: by the size
        self.fit = GridFit(False, 4, 29, 2)
        self._height = 0  # the max-height refit set (0: none yet)

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first sample …", id="no-gpus")
        yield self.board

    class Reflowed(Message):
        """The grid's size changed: which GPUs are in sight may have too."""

    def on_resize(self, _event: Resize) -> None:
        self.refit()
        self.post_message(self.Reflowed())

    @property
    def compact(self) -> bool:
        return self.fit.compact

    def toggle_compact(self) -> bool:
        """Full panels / one line per GPU, whatever the size says; True when compact now."""
        self.choice = not self.fit.compact
        self.refit()
        return self.fit.compact

    def refit(self, draw: bool = True) -> None:
        """Choose mode, columns and height for the GPUs shown, the width and the pane's height
        (after a resize of the grid or of the pane, and when GPUs come or go); ``draw`` False:
        the panels are laid out but not drawn (their host is not on screen)."""
        if not self.size.width and self.choice is None:
            # Not laid out yet (a pane made when its host is shown draws before its layout):
            # a zero height would call for the compact lines, eight widgets made for nothing.
            # Its first resize fits it.
            return
        parent = self.parent
        pane = parent.size.height if isinstance(parent, Widget) else self.screen.size.height
        width = max(1, self.size.width)
        fit = fit_grid(len(self.panels), width, pane, self.choice)
        # No GPUs and one GPU have the same shape: the height must follow the panels too,
        # or a one-GPU host keeps the one-row grid of "waiting for the first sample".
        height = max(1, fit.height) if self.panels else 1
        if (fit, height) == (self.fit, self._height) and self.has_class("-compact") == fit.compact:
            return
        self.fit, self._height = fit, height
        if fit.compact and not self.lines_made:
            self.lines_made = True
            self._mount_in_order(list(self.panels.values()))
        self.set_class(fit.compact, "-compact")
        self.styles.max_height = height
        self.board.place(fit.columns, fit.column_width)  # every column the same width
        if draw:
            self.redraw()

    def _redraw_lines(self) -> None:
        for line in self.lines.values():
            line.redraw()

    def region_of(self, index: int) -> Region | None:
        """Where GPU ``index`` is drawn now (its line or its panel's box, on the screen,
        scrolled out of sight or not); None if it is not."""
        return self.regions_of((index,)).get(index)

    def regions_of(self, indices: Iterable[int]) -> dict[int, Region]:
        """``region_of`` for each of these GPUs that is drawn (the board's place looked up
        once: the header asks after every sample)."""
        if self.fit.compact:
            lines = [(i, self.lines.get(i)) for i in indices]
            return {i: line.region for i, line in lines if line is not None}
        board = self.board.region
        if not board:  # not laid out yet: nowhere
            return {}
        return {i: box.translate(board.offset) for i, box in self.board.boxes(indices).items()}

    def sync(self, diag: Diagnosis | None) -> None:
        """Draw the panels as the store keeps them (``diag``: the latest sample, for what
        the grid says when there is no GPU): a line for each new GPU, none for a gone one."""
        # A GPU that went and came back while hidden is a new panel under its old index.
        gone = [i for i, line in self.lines.items() if self.panels.get(i) is not line.panel]
        new = [p for i, p in self.panels.items() if i in gone or i not in self.lines]
        for index in gone:
            self.lines.pop(index).remove()
        if self.lines_made:
            self._mount_in_order(new)
        if new or gone:
            self.refit(draw=False)
        self.redraw()
        note = self.query_one("#no-gpus", Static)
        note.display = not self.panels
        self.set_class(not self.panels, "-empty")
        if not self.panels and diag is not None:
            note.update(_no_gpus_text(diag))

    def redraw(self) -> None:
        """Draw what the panels kept (the latest sample of a host shown again)."""
        if self.fit.compact:
            self._redraw_lines()
        else:
            self.board.draw()

    def show_stale(self, age: int | None) -> None:
        """No sample for ``age`` seconds (None: fresh): every panel is greyed and says so."""
        self.set_class(age is not None, "-stale")
        changed = [panel.show_stale(age) for panel in self.panels.values()]
        if any(changed):
            self.redraw()

    def pick(self, indices: tuple[int, ...]) -> bool:
        """Mark the panels of ``indices`` and scroll the first into view; False if none."""
        for i, panel in self.panels.items():
            panel.pick(i in indices)
        self.redraw()
        shown = [i for i in indices if i in self.panels]
        if not shown:
            return False
        if self.fit.compact:
            self.scroll_to_widget(self.lines[shown[0]], animate=False)
        else:
            box = self.board.box(shown[0])
            if box is not None:  # the board's cells, in the grid's scrolled content
                self.scroll_to_region(
                    box.translate(self.board.virtual_region.offset), animate=False
                )
        return True

    def _mount_in_order(self, new: list[GpuPanel]) -> None:
        # New GPUs after the first sample are rare (a recovered driver); keep index order.
        old = sorted(self.lines)
        for panel in sorted(new, key=lambda p: p.index):
            line = self.lines[panel.index] = GpuLine(panel)
            old.append(panel.index)
            old.sort()
            later = [i for i in old if i > panel.index]
            if later:
                self.mount(line, before=self.lines[later[0]])
            else:
                self.mount(line)
            line.redraw()


def _no_gpus_text(diag: Diagnosis) -> str:
    src = diag.telemetry_source
    if src == "none":
        why = diag.telemetry_error or "no NVML and no nvidia-smi here"
        if "did not answer" in why:  # the probe's words for a tool that timed out
            why = f"{why}: it hung (a stuck driver?)"
        return f"GPUs: no readings ({safe_label(why, 160)}); run and logs still shown"
    return f"GPUs: none reported by {src}"
