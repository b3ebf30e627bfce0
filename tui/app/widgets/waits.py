"""The wait bar: progress of a long control action (kill grace, GPU memory release, launch
start window) with a cancel key. Control reports steps; this only draws them."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import Horizontal
from textual.message import Message
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
        /* Above the key footer, which is docked to the same edge: two docked widgets share
           the edge's last row, and the footer is drawn over the bar. The margin lifts the bar
           one row and keeps that row clear of the content above. */
        dock: bottom; margin-bottom: 1;
        height: 1; display: none; background: $warning 25%; padding: 0 1;
        &.-active { display: block; }
        #wait-text { width: 1fr; }
        ProgressBar { width: 34; }
        #wait-cancel { width: auto; color: $text-muted; }
    }
    """

    def __init__(self) -> None:
        super().__init__(id="wait")
        # Its widgets are made at the first wait (most sessions have none: five widgets
        # fewer); until they are there, what they are to show is kept here.
        self.said = Text()
        self.total: float | None = 1  # the bar's (None: indeterminate)
        self.progress = 0.0
        self.parts = "none"  # none | making | made

    async def _make(self) -> None:
        await self.mount_all(
            [
                Static(self.said, id="wait-text"),
                # Determinate while hidden: an indeterminate bar animates on a 15 Hz timer
                # even so.
                _WaitProgress(total=1, show_eta=False, id="wait-bar"),
                Static(" esc: cancel", id="wait-cancel"),
            ]
        )
        self.parts = "made"
        self._draw()

    def _show(self, text: str | None, total: float | None, progress: float | None = None) -> None:
        """Say ``text`` (None: as before), the bar at ``total`` and ``progress`` (None: as
        before)."""
        if text is not None:
            self.said = Text(safe_label(text, 200))
        self.total = total
        self.progress = self.progress if progress is None else progress
        if self.parts == "made":
            self._draw()
        elif self.parts == "none" and self.has_class("-active"):
            self.parts = "making"  # drawn once made, as the latest step left it
            self.call_later(self._make)

    def _draw(self) -> None:
        self.query_one("#wait-text", Static).update(self.said)
        self.query_one(ProgressBar).update(total=self.total, progress=self.progress)

    class Toggled(Message):
        """The bar came or went: it takes a row of the screen or gives it back. Textual
        sends no resize to the views that row shrinks or grows, so a following log tail
        would stay a row off its end until its next line."""

    def start(self, what: str) -> None:
        if not self.active:
            self.post_message(self.Toggled())
        self.add_class("-active")
        self._show(what, total=None, progress=0)

    def step(self, text: str, done: float | None = None, total: float | None = None) -> None:
        if total:
            self._show(text, total=total, progress=min(done or 0.0, total))
        else:
            self._show(text, total=None)

    def stop(self) -> None:
        if self.active:
            self.post_message(self.Toggled())
        self.remove_class("-active")
        self._show(None, total=1, progress=0)

    @property
    def active(self) -> bool:
        return self.has_class("-active")
