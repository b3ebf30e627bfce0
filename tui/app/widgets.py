"""Small shared widget helpers: the app's draw guard, reached from any widget, and
theme-aware re-rendering."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.content import Content
from textual.geometry import Region
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Static

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

    # Our text has no @click links: without this, every line drawn is copied once more to
    # style links (Textual's Strip._apply_link_style, a quarter of a GPU panel's render).
    auto_links: Reactive[bool] = Reactive(False)

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self, _theme: str) -> None:
        redraw_guarded(self, self.redraw)

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)

    def redraw(self) -> None:
        """Rebuild the content from the last data shown (override)."""


# -- drawing only what changed (issue 16) --

_SHOWN = "_dflash_shown"  # the attribute that keeps what a widget last showed


def same_text(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` draw the same (Text: its spans, style and wrapping too)."""
    # Rich's Text compares its plain text and spans only; its own style and justification
    # also change what is drawn.
    if isinstance(a, Text) and isinstance(b, Text):
        return (a.plain, a.spans, a.style, a.justify, a.no_wrap, a.overflow, a.end) == (
            b.plain,
            b.spans,
            b.style,
            b.justify,
            b.no_wrap,
            b.overflow,
            b.end,
        )
    return type(a) is type(b) and a == b


def fixed_size(widget: Widget) -> bool:
    """Whether the widget's size is set by its CSS, not by its content: then a new content
    needs no layout of the screen (the costliest part of a redraw)."""
    height, width = widget.styles.height, widget.styles.width
    return (
        height is not None
        and not height.is_auto
        and (width is None or not width.is_auto)
        and widget.styles.max_height is None
        and widget.styles.min_height is None
    )


def show_changed(widget: Static, content: Text | str) -> bool:
    """``widget.update(content)`` unless it shows the same already; True when it drew. A
    sample that changes nothing a widget shows costs no render and no layout."""
    if same_text(getattr(widget, _SHOWN, None), content):
        return False
    setattr(widget, _SHOWN, content)
    widget.update(content, layout=False)
    if _needs_layout(widget):
        widget.refresh(layout=True)
    return True


def _needs_layout(widget: Widget) -> bool:
    """Whether the new content changes the widget's size: a layout of the screen (the costly
    part of a redraw) only then. A fixed size never does; an auto width always may; an auto
    height does when the content, wrapped at the widget's width, takes other lines."""
    if fixed_size(widget):
        return False
    width = widget.styles.width
    size = widget.size
    if (width is not None and width.is_auto) or not size.width or not widget.display:
        return True
    parent = widget.parent
    container = parent.size if isinstance(parent, Widget) else size
    # update() cleared the cached dimensions: this measures the new content.
    height = widget.get_content_height(container, widget.app.size, size.width)
    return height != size.height


def set_border_changed(widget: Widget, title: Text | None, subtitle: Text | None) -> None:
    """The border's title and subtitle, set only when they changed. A changed one repaints
    its own row of the box (the title's top, the subtitle's bottom), not the widget: a GPU
    panel's subtitle (memory, temperature, power) moves with nearly every sample. A title
    that comes or goes refreshes the widget as Textual's own setter does."""
    last = getattr(widget, "_dflash_border", None)
    if last is not None and same_text(last[0], title) and same_text(last[1], subtitle):
        return
    widget._dflash_border = (title, subtitle)  # type: ignore[attr-defined]
    if (
        last is None
        or (last[0] is None) != (title is None)
        or (last[1] is None) != (subtitle is None)
    ):
        widget.border_title = title
        widget.border_subtitle = subtitle
        return
    # Textual's setter, less its refresh of the whole widget (textual is pinned exactly).
    widget._border_title = _border_label(widget, title)
    widget._border_subtitle = _border_label(widget, subtitle)
    refresh_border_rows(widget, not same_text(last[0], title), not same_text(last[1], subtitle))


def _border_label(widget: Widget, text: Text | None) -> Content | None:
    if text is None:
        return None
    return widget.render_str(Content.from_rich_text(text)).expand_tabs(4).split()[0]


def refresh_border_rows(widget: Widget, top: bool, bottom: bool) -> None:
    """Repaint the top row and/or the bottom row of ``widget``'s box only (where its border
    title and subtitle are drawn)."""
    off, outer = widget.content_offset, widget.outer_size
    if not widget.is_mounted or not outer.height:
        widget.refresh()
        return
    for wanted, row in ((top, 0), (bottom, outer.height - 1)):
        if wanted:  # refresh() takes content coordinates: the box's rows lie outside them
            widget.refresh(Region(-off.x, row - off.y, outer.width, 1))
