"""The confirm dialog of a destructive action: it names exactly what will be signalled."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks before a destructive action. The body names exactly what will be signalled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
        # The body scrolls whichever button has the focus.
        Binding("up", "scroll_body(-1)", "Scroll up", show=False),
        Binding("down", "scroll_body(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_body(-10)", "Page up", show=False),
        Binding("pagedown", "scroll_body(10)", "Page down", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 84; max-width: 100%; height: auto; max-height: 100%;  /* WIDTH */
        border: thick $error; background: $surface; padding: 1 2;
        border-subtitle-color: $text-muted;
    }
    ConfirmScreen.-small > Vertical { padding: 0 1; }
    ConfirmScreen .title { text-style: bold; color: $text-error; margin-bottom: 1; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 20; scrollbar-size-vertical: 1; }
    ConfirmScreen Horizontal { height: 3; margin-top: 1; align: right middle; }
    ConfirmScreen.-small Horizontal { margin-top: 0; }
    ConfirmScreen Button { margin-left: 2; }
    """
    WIDTH = 84  # as in the CSS above
    SMALL = (90, 30)  # below either: less padding, so the buttons keep their place at 80x24
    BODY_MAX = 20  # rows of body before it scrolls, on a large screen

    def __init__(self, title: str, body: Text, yes: str | None) -> None:
        """``yes`` None: nothing can be done (control would refuse it): no yes button, and
        ``y`` answers nothing; the dialog only tells, and closes with n or esc."""
        super().__init__()
        self.title_text, self.body, self.yes = title, body, yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Text(self.title_text), classes="title")
            with VerticalScroll():
                yield Static(self.body, id="confirm-body")
            with Horizontal():
                if self.yes is not None:
                    yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button(
                    "Cancel (n/esc)" if self.yes else "Close (n/esc)", variant="primary", id="no"
                )

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # Enter alone must never destroy anything
        self._fit(self.app.size.width, self.app.size.height)

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        """The title and the buttons always show: the body gets the rows that are left and
        scrolls inside the dialog (the border says so) when it needs more."""
        small = width < self.SMALL[0] or height < self.SMALL[1]
        self.set_class(small, "-small")
        # The title wraps (a long host name): count its rows at the dialog's inner width.
        inner = max(1, min(self.WIDTH, width) - 2 - (2 if small else 4))
        title = max(1, len(Text(self.title_text).wrap(self.app.console, inner)))
        # border 2, padding 0 or 2, title + margin 1, buttons 3 + margin 0 or 1
        chrome = 2 + title + 1 + 3 + (0 if small else 2 + 1)
        body = self.query_one(VerticalScroll)
        body.styles.max_height = max(1, min(self.BODY_MAX, height - chrome))
        self.call_after_refresh(self._scroll_hint)

    def _scroll_hint(self) -> None:
        body = self.query_one(VerticalScroll)
        box = self.query_one("#confirm-box", Vertical)
        box.border_subtitle = "↑/↓ scroll for more" if body.max_scroll_y > 0 else None

    def action_scroll_body(self, rows: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=rows, animate=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "answer" and parameters == (True,) and self.yes is None)

    def action_answer(self, yes: bool) -> None:
        if yes and self.yes is None:
            return  # nothing to confirm
        self.dismiss(yes)
