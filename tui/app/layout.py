"""The main screen: header, GPU grid, metrics + logs on the left, findings and the
process tree / timeline on the right, the wait bar and the footer. Keys live here so the
footer shows them (and ``tab``, which Textual's Screen binds hidden by default)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, TabbedContent, TabPane

from tui.app.findings.panel import FindingsList, TimelineList
from tui.app.gpus.grid import GpuGrid
from tui.app.header import RunHeader
from tui.app.logs.area import LogArea
from tui.app.metrics import MetricsStrip
from tui.app.procs.tree import ProcTree
from tui.app.waits import WaitBar

# (key, action, footer text, help text). Destructive ones are listed in DESTRUCTIVE.
KEYS: tuple[tuple[str, str, str, str], ...] = (
    ("l", "launch", "Launch", "launch the run (returns once the job is seen alive)"),
    ("k", "kill", "Kill", "kill the run's process group (confirm names PIDs and GPUs)"),
    ("r", "restart", "Restart", "kill, wait for GPU memory release, launch again (confirm)"),
    ("K", "kill_process", "Kill PID", "kill the process selected in the tree (confirm)"),
    ("slash", "filter", "Filter", "edit the log filter (regex; enter applies, empty = off)"),
    ("a", "toggle_filter", "All/filter", "show all log lines / only the filtered ones"),
    ("f", "follow", "Follow", "follow the end of the logs on/off"),
    ("tab", "focus_next", "Areas", "move between areas (GPUs, logs, findings, tree, timeline)"),
    ("t", "next_theme", "Theme", "next theme (dflash-dark, -light, -contrast, yours)"),
    ("e", "other_tab", "Procs/Events", "switch the process tree and the event timeline"),
    ("question_mark", "help", "Help", "this help"),
    ("q", "quit", "Quit (run stays)", "quit the app; the run keeps running"),
)
DESTRUCTIVE = frozenset({"launch", "kill", "restart", "kill_process"})
HIDDEN = frozenset(
    {"toggle_filter", "other_tab"}
)  # in the help and the palette; the footer is full
KEY_NAMES = {"slash": "/", "question_mark": "?"}


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"app.{action}", text, show=action not in HIDDEN)
            for key, action, text, _ in KEYS
        ),
        Binding("escape", "app.escape", "Cancel", show=False),
    ]

    def __init__(self, host: str, read_only: bool) -> None:
        super().__init__(id="main")
        self.host, self.read_only = host, read_only

    def compose(self) -> ComposeResult:
        yield RunHeader(self.host, self.read_only)
        yield GpuGrid()
        with Horizontal(id="lower"):
            with Vertical(id="left"):
                yield MetricsStrip()
                yield LogArea()
            with Vertical(id="right"):
                yield FindingsList()
                with TabbedContent(id="right-tabs"):
                    with TabPane("Processes", id="tab-procs"):
                        yield ProcTree()
                    with TabPane("Timeline", id="tab-timeline"):
                        yield TimelineList()
        yield WaitBar()
        yield Footer()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # Lines added while the timeline was hidden could not scroll it; show the newest now.
        if event.pane.id == "tab-timeline":
            timeline = self.query_one(TimelineList)
            self.call_after_refresh(timeline.scroll_end, animate=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-filter":
            event.stop()
            self.app.call_later(self.app.apply_filter, event.value)  # type: ignore[attr-defined]
