"""The wait bar: progress of a long control action (kill grace, GPU memory release, launch
start window) with a cancel key. Control reports steps; this only draws them."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from dflash_tui.core.base.text import safe_label


class _WaitProgress(ProgressBar):
    """Textual's bar, less the 1 s timer its mount starts to refresh the ETA: this bar shows
    none, and the timer would wake the app every second while nothing waits."""

    def set_interval(self, interval: float, callback: Any = None, **kwargs: Any) -> Timer:
        timer = super().set_interval(interval, callback, **kwargs)
        if callback == self.update:  # bound methods: equal when of the same bar
            timer.stop()
        return timer


class WaitBar(Horizontal):
    DEFAULT_CSS = """
    WaitBar {
        dock: bottom; height: 1; display: none; background: $warning 25%; padding: 0 1;
        &.-active { display: block; }
        #wait-text { width: 1fr; }
        ProgressBar { width: 34; }
        #wait-cancel { width: auto; color: $text-muted; }
    }
    """

    def __init__(self) -> None:
        super().__init__(id="wait")

    def compose(self) -> ComposeResult:
        yield Static(id="wait-text")
        # Determinate while hidden: an indeterminate bar animates on a 15 Hz timer even so.
        yield _WaitProgress(total=1, show_eta=False, id="wait-bar")
        yield Static(" esc: cancel", id="wait-cancel")

    def start(self, what: str) -> None:
        self.add_class("-active")
        self.query_one("#wait-text", Static).update(Text(safe_label(what, 200)))
        self.query_one(ProgressBar).update(total=None, progress=0)

    def step(self, text: str, done: float | None = None, total: float | None = None) -> None:
        self.query_one("#wait-text", Static).update(Text(safe_label(text, 200)))
        bar = self.query_one(ProgressBar)
        if total:
            bar.update(total=total, progress=min(done or 0.0, total))
        else:
            bar.update(total=None)

    def stop(self) -> None:
        self.remove_class("-active")
        self.query_one(ProgressBar).update(total=1, progress=0)

    @property
    def active(self) -> bool:
        return self.has_class("-active")
