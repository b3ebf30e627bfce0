"""The main screen: header, GPU grid, metrics + logs on the left, findings and the
process tree / timeline on the right, the wait bar and the footer. Keys live here so the
footer shows them (and ``tab``, which Textual's Screen binds hidden by default).

Every host gets its own set of detail widgets, a ``HostPane`` (tui/app/host_pane.py). With two
or more hosts, the host overview comes first and the panes share a ContentSwitcher: switching
host shows another pane, so no host's logs, sparklines, tree or timeline are ever lost. One
host: its pane alone, without the overview.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Input, TabbedContent

from dflash_tui.app.findings.panel import TimelineList
from dflash_tui.app.header import RunHeader
from dflash_tui.app.host_pane import HostPane, pane_id
from dflash_tui.app.overview import HostOverview
from dflash_tui.app.waits import WaitBar

# (key, action, footer text, help text). Destructive ones are listed in DESTRUCTIVE. Each
# binding's id (the action's name here) is what a config's [keys] table remaps
# (tui/app/keymap.py; core/base/config_keys.py KEY_IDS lists the same ids).
KEYS: tuple[tuple[str, str, str, str], ...] = (
    ("l", "launch", "Launch", "launch the run (returns once the job is seen alive)"),
    ("k", "kill", "Kill", "kill the run's process group (confirm names PIDs and GPUs)"),
    ("r", "restart", "Restart", "kill, wait for GPU memory release, launch again (confirm)"),
    ("K", "kill_process", "Kill PID", "kill the process selected in the tree (confirm)"),
    ("A", "auto_restart", "Auto-restart", "auto-restart after a crash on/off (config [restart])"),
    ("R", "refresh", "Refresh", "sample every host now, not waiting for the interval"),
    ("slash", "filter", "Filter", "edit the log filter (regex; enter applies, empty = off)"),
    ("a", "toggle_filter", "All/filter", "show all log lines / only the filtered ones"),
    ("f", "follow", "Follow", "follow the end of the logs on/off"),
    ("s", "search", "Search", "search the logs (regex; n / N: next / previous match)"),
    ("W", "wrap", "Wrap", "wrap long log lines / cut them (← → scroll)"),
    ("S", "save_view", "Save view", "save the log lines shown to a file (path in a notification)"),
    ("v", "pager", "Pager", "open the whole log in $PAGER (a terminal-safe copy; q returns)"),
    ("tab", "focus_next", "Areas", "move between areas (GPUs, logs, findings, tree, timeline)"),
    ("t", "next_theme", "Theme", "next theme (dflash-dark, -light, -contrast, yours)"),
    (
        "e",
        "other_tab",
        "Procs/Events",
        "switch the process tree, the event timeline, the history plots",
    ),
    ("w", "whole_machine", "All procs", "tree: the whole machine / the run's and GPU holders"),
    ("p", "gpu_procs", "GPU procs", "GPU process table (o sort, / filter, space tag, K kill)"),
    ("c", "compact", "Compact", "GPU grid: one line per GPU / full panels"),
    ("plus", "zoom", "Zoom", "the focused area (log, tree, findings, ...) fills the screen / back"),
    ("question_mark", "help", "Help", "this help"),
    ("q", "quit", "Quit (run stays)", "quit the app; the run keeps running"),
)
DESTRUCTIVE = frozenset({"launch", "kill", "restart", "kill_process", "auto_restart"})
HIDDEN = frozenset(
    {
        "toggle_filter",
        "other_tab",
        "auto_restart",
        "whole_machine",
        "gpu_procs",
        "compact",
        "zoom",
        "search",
        "wrap",
        "save_view",
        "pager",
    }
)  # in the help and the palette; the footer is full
# The footer's order: help and quit first, so a narrow terminal (80 columns) still shows them
# whatever is cut at the right. The help keeps KEYS' order.
FIRST = ("help", "quit")
FOOTER_KEYS = [k for a in FIRST for k in KEYS if k[1] == a] + [k for k in KEYS if k[1] not in FIRST]
KEY_NAMES = {"slash": "/", "question_mark": "?", "plus": "+"}
# Host keys: only with two or more hosts (check_action hides them otherwise).
HOST_ACTIONS = frozenset({"next_host", "prev_host", "show_host"})
HOST_HELP: tuple[tuple[str, str], ...] = (
    ("[ / ]", "show the previous / next host (the overview highlights it)"),
    ("1-9", "show host n (its row in the overview); l, k, r, K act on the shown host only"),
)


class MainScreen(Screen[None], inherit_bindings=False):
    # Not inherited: Screen binds tab first, which would put "tab Areas" first in the footer.
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"app.{action}", text, show=action not in HIDDEN, id=action)
            for key, action, text, _ in FOOTER_KEYS[: len(FIRST)]
        ),
        # Early, so the footer shows it (only with several hosts: check_action hides it).
        Binding("right_square_bracket", "app.next_host", "Host", key_display="[ ]", id="next_host"),
        # Early too, and only while the History tab is shown (check_action hides them).
        Binding("z", "app.history_zoom", "Zoom", id="history_zoom"),
        Binding(
            "less_than_sign", "app.history_pan(-1)", "Pan", key_display="< >", id="history_earlier"
        ),
        Binding("greater_than_sign", "app.history_pan(1)", "Pan later", False, id="history_later"),
        *(
            Binding(key, f"app.{action}", text, show=action not in HIDDEN, id=action)
            for key, action, text, _ in FOOTER_KEYS[len(FIRST) :]
        ),
        Binding("escape", "app.escape", "Cancel", show=False),
        Binding("n", "app.search_step(True)", "Next match", show=False, id="search_next"),
        Binding("N", "app.search_step(False)", "Previous match", False, id="search_previous"),
        Binding("shift+tab", "app.focus_previous", "Focus Previous", show=False),
        Binding("ctrl+c,super+c", "screen.copy_text", "Copy selected text", show=False),
        Binding("left_square_bracket", "app.prev_host", "Previous host", False, id="prev_host"),
        *(
            Binding(str(n), f"app.show_host({n - 1})", f"Host {n}", show=False)
            for n in range(1, 10)
        ),
    ]

    def __init__(
        self, hosts: Sequence[str], read_only: bool, on_filter: Callable[[str], None]
    ) -> None:
        """``on_filter``: called with the log filter's text once it is submitted."""
        super().__init__(id="main")
        self.hosts, self.read_only, self.on_filter = tuple(hosts), read_only, on_filter

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """As Textual's, but a keymap ([keys]) leaves the footer's order as declared: Textual
        moves every remapped binding to the end, where help and quit would be cut first."""
        active = super().active_bindings
        if not getattr(self.app, "user_keys", None):
            return active
        order = {b.id: i for i, b in enumerate(self.BINDINGS) if isinstance(b, Binding) and b.id}
        items = list(active.items())
        mine = [i for i, (_, a) in enumerate(items) if a.binding.id in order]
        ranked = sorted((items[i] for i in mine), key=lambda kv: order[kv[1].binding.id or ""])
        for i, item in zip(mine, ranked, strict=True):
            items[i] = item
        return dict(items)

    def compose(self) -> ComposeResult:
        if len(self.hosts) == 1:
            yield HostPane(self.hosts[0], 0, self.read_only)
        else:
            yield HostOverview()
            with ContentSwitcher(id="hosts", initial=pane_id(0)):
                for i, host in enumerate(self.hosts):
                    yield HostPane(host, i, self.read_only)
        yield WaitBar()
        yield Footer(compact=len(self.hosts) > 1)  # one more key to fit in 120 columns

    def pane(self, index: int) -> HostPane | None:
        """Where the detail widgets of host ``index`` live; None once that pane is gone."""
        try:
            return self.query_one(f"#{pane_id(index)}", HostPane)
        except NoMatches:
            return None

    def show_pane(self, index: int) -> None:
        if len(self.hosts) > 1:
            self.query_one("#hosts", ContentSwitcher).current = pane_id(index)
            pane = self.query_one(f"#{pane_id(index)}", HostPane)
            pane.catch_up()  # what it did not draw while another host was shown
            # Its header tells which problem GPUs are out of sight: check once it is laid out.
            self.call_after_refresh(pane.query_one(RunHeader).recheck)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # Lines added while the timeline was hidden could not scroll it; show the newest now.
        if event.pane.id == "tab-timeline":
            timeline = event.tabbed_content.query_one(TimelineList)
            self.call_after_refresh(timeline.scroll_end, animate=False)
        # The plots need the width: the History tab takes the whole lower area (app.tcss).
        pane = next((a for a in event.tabbed_content.ancestors if isinstance(a, HostPane)), None)
        if pane is not None:
            pane.set_class(event.pane.id == "tab-history", "-history")
            pane.set_class(event.pane.id == "tab-gpuprocs", "-wide")
            if event.pane.id == "tab-history":
                self.call_after_refresh(pane.history().replot)
        self.refresh_bindings()  # the History keys show only with it

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-filter":
            event.stop()
            self.app.call_later(self.on_filter, event.value)
