"""Small shared widget helpers: the app's draw guard, reached from any widget, and
theme-aware re-rendering."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Static

from dflash_tui.app.widgets.palette import Palette, palette_for

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


def follow_theme(widget: Widget, redraw: Callable[[], None]) -> None:
    """Call ``redraw`` (through the draw guard) after each change of the app's theme, until
    ``unfollow_theme`` (the widget's unmount). Not ``widget.watch(app, "theme", ...)``: Textual
    keeps a watcher of another object's attribute until that attribute next changes, so every
    widget removed since the last theme change stayed reachable from the app, with all it held
    (a finished run's log tail and its 5,000 lines, every run). The theme signal's
    subscription is dropped by ``unfollow_theme``."""
    widget.app.theme_changed_signal.subscribe(widget, lambda _t: redraw_guarded(widget, redraw))


def unfollow_theme(widget: Widget) -> None:
    """The end of ``follow_theme`` (call it from the widget's ``on_unmount``)."""
    widget.app.theme_changed_signal.unsubscribe(widget)


class Themed(Widget):
    """A widget that draws Rich Text with theme colours and redraws when the theme changes."""

    # Our text has no @click links: without this, every line drawn is copied once more to
    # style links (Textual's Strip._apply_link_style, a quarter of a GPU panel's render).
    auto_links: Reactive[bool] = Reactive(False)

    def on_mount(self) -> None:
        follow_theme(self, lambda: self.redraw())  # looked up at each change

    def on_unmount(self) -> None:
        unfollow_theme(self)

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)

    def redraw(self) -> None:
        """Rebuild the content from the last data shown (override)."""


# -- drawing only what changed --

_SHOWN = "_dflash_shown"  # the attribute that keeps what a widget last showed


def same_text(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` draw the same (Text: its spans, style and wrapping too)."""
    # Rich's Text compares its plain text and spans only; its own style and justification
    # also change what is drawn.
    if a is b:
        return True  # a line kept as it was (a Text is not changed once drawn)
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


def same_texts(a: Sequence[object], b: Sequence[object]) -> bool:
    """Whether two sequences of lines draw the same, line for line (``same_text``)."""
    return len(a) == len(b) and all(map(same_text, a, b))


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
