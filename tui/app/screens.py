"""Modal screens: the confirm dialog for destructive actions, and the help screen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks before a destructive action. The body names exactly what will be signalled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 84; height: auto; max-height: 80%;
        border: thick $error; background: $surface; padding: 1 2;
    }
    ConfirmScreen .title { text-style: bold; color: $text-error; margin-bottom: 1; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 20; }
    ConfirmScreen Horizontal { height: 3; margin-top: 1; align: right middle; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(self, title: str, body: Text, yes: str) -> None:
        super().__init__()
        self.title_text, self.body, self.yes = title, body, yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), classes="title")
            with VerticalScroll():
                yield Static(self.body, id="confirm-body")
            with Horizontal():
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("Cancel (n/esc)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # Enter alone must never destroy anything

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen[None]):
    """Every key the app answers right now (read-only mode shows fewer), and what q means."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 80; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    """

    def __init__(self, keys: Sequence[tuple[str, str]], notes: Sequence[str]) -> None:
        super().__init__()
        self.keys, self.notes = keys, notes

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("Keys\n\n", style="bold")
        for key, what in self.keys:
            t.append(f"  {key:>9}", style="bold")
            t.append(f"  {what}\n")
        t.append("\n")
        for note in self.notes:
            t.append(f"{note}\n")
        t.append("\nesc, ? or q closes this help.", style="dim")
        with VerticalScroll():
            yield Static(t, id="help-body")
