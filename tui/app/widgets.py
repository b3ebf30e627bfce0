"""Small shared widget helpers: the app's draw guard, reached from any widget, and
theme-aware re-rendering."""

from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget

from dflash_tui.app.palette import Palette, palette_for

GUARD = "draw_safely"  # the app's method: (what, draw) -> None, reporting a failure once


def draw_guarded(widget: Widget, what: str, draw: Callable[[], None]) -> None:
    """Draw through the app's draw guard: a draw that raises in a handler or a watcher would
    end the app; the guard reports a broken panel once and keeps the rest."""
    guard = getattr(widget.app, GUARD, None)
    if guard is not None:
        guard(what, draw)
        return
    try:
        draw()
    except Exception as exc:  # an app without the guard: log it, keep running
        widget.log.error(f"drawing {what} failed", exc)


def redraw_guarded(widget: Widget, redraw: Callable[[], None]) -> None:
    """Redraw on a theme change through the app's draw guard."""
    draw_guarded(widget, widget.id or type(widget).__name__, redraw)


class Themed(Widget):
    """A widget that draws Rich Text with theme colours and redraws when the theme changes."""

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self, _theme: str) -> None:
        redraw_guarded(self, self.redraw)

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)

    def redraw(self) -> None:
        """Rebuild the content from the last data shown (override)."""
