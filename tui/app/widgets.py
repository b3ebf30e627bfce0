"""Small shared widget helpers: theme-aware re-rendering."""

from __future__ import annotations

from textual.widget import Widget

from tui.app.palette import Palette, palette_for


class Themed(Widget):
    """A widget that draws Rich Text with theme colours and redraws when the theme changes."""

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self, _theme: str) -> None:
        # A redraw that raises here would end the app: go through the app's draw guard (it
        # reports a broken panel once and keeps the rest), as the sample redraws do.
        guard = getattr(self.app, "_safely", None)
        if guard is not None:
            guard(self.id or type(self).__name__, self.redraw)
            return
        try:
            self.redraw()
        except Exception as exc:  # an app without the guard: log it, keep running
            self.log.error(f"redrawing {type(self).__name__} failed", exc)

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)

    def redraw(self) -> None:
        """Rebuild the content from the last data shown (override)."""
