"""The GPU grid: a panel per GPU, four across at 120 columns, two rows visible, then scroll."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.events import Resize
from textual.widgets import Static

from dflash_tui.app.gpus.panel import GpuPanel
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.diagnose import Diagnosis

PANEL_WIDTH = 30  # columns per panel: 4 x 30 = 120


class GpuGrid(ScrollableContainer, can_focus=True):
    """Mounts and removes panels as GPUs appear; never rebuilds the ones it has."""

    DEFAULT_CSS = """
    GpuGrid {
        layout: grid;
        grid-size: 4;
        grid-rows: 7;
        height: auto;
        max-height: 14;
        overflow-y: auto;
        &:focus { background-tint: $foreground 4%; }
        #no-gpus { height: 1; column-span: 4; color: $text-muted; }
    }
    """

    def __init__(self) -> None:
        super().__init__(id="gpus")
        self.panels: dict[int, GpuPanel] = {}

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first sample …", id="no-gpus")

    def on_resize(self, event: Resize) -> None:
        self.styles.grid_size_columns = max(1, event.size.width // PANEL_WIDTH)

    def show(self, diag: Diagnosis) -> None:
        active = diag.run_state in ACTIVE
        seen = set()
        new = []
        for view in diag.gpus:
            seen.add(view.index)
            panel = self.panels.get(view.index)
            if panel is None:
                panel = self.panels[view.index] = GpuPanel(view.index)
                new.append(panel)
            panel.show(view, diag.time, active)
        for index in [i for i in self.panels if i not in seen]:
            self.panels.pop(index).remove()
        self._mount_in_order(new)
        note = self.query_one("#no-gpus", Static)
        note.display = not self.panels
        if not self.panels:
            note.update(_no_gpus_text(diag))

    def show_stale(self, age: int | None) -> None:
        """No sample for ``age`` seconds (None: fresh): every panel is greyed and says so."""
        self.set_class(age is not None, "-stale")
        for panel in self.panels.values():
            panel.show_stale(age)

    def pick(self, indices: tuple[int, ...]) -> bool:
        """Mark the panels of ``indices`` and scroll the first into view; False if none."""
        for i, panel in self.panels.items():
            panel.set_class(i in indices, "-picked")
        shown = [self.panels[i] for i in indices if i in self.panels]
        if shown:
            self.scroll_to_widget(shown[0], animate=False)
        return bool(shown)

    def _mount_in_order(self, new: list[GpuPanel]) -> None:
        # New GPUs after the first sample are rare (a recovered driver); keep index order.
        old = sorted(i for i, p in self.panels.items() if p not in new)
        for panel in sorted(new, key=lambda p: p.index):
            later = [i for i in old if i > panel.index]
            if later:
                self.mount(panel, before=self.panels[later[0]])
            else:
                self.mount(panel)


def _no_gpus_text(diag: Diagnosis) -> str:
    src = diag.telemetry_source
    if src == "none":
        why = diag.telemetry_error or "no NVML and no nvidia-smi here"
        if "did not answer" in why:  # the probe's words for a tool that timed out
            why = f"{why}: it hung (a stuck driver?)"
        return f"GPUs: no readings ({safe_label(why, 160)}); run and logs still shown"
    return f"GPUs: none reported by {src}"
