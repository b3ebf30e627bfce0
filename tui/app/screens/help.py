"""The help screen: every key the app answers right now, and what q means."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """Every key the app answers right now (read-only mode shows fewer), and what q means."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 80; max-width: 100%; height: auto; max-height: 90%;
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
