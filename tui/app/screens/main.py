"""The main screen: header, GPU grid, metrics + logs on the left, findings and the
process tree / timeline on the right, the wait bar and the footer. The key table's bindings
(tui/app/keys/table.py) are this screen's, so the footer shows them (and ``tab``, which
Textual's Screen binds hidden by default).

Every host gets its own ``HostPane`` (tui/app/host/pane.py), whose widgets are made the first
time it is shown and removed once ``PANES_KEPT`` other hosts were shown since; what
accumulates (logs, sparklines, timeline, history) is kept in its store meanwhile, so nothing is
lost, and the widgets made again draw it. With two or more hosts, the host overview comes first
and the panes share a ContentSwitcher: switching host shows another pane. One host: its pane
alone, without the overview.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, TabbedContent

from dflash_tui.app.host.findings.panel import TimelineList
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.pane import HostPane, pane_id
from dflash_tui.app.keys.footer import KeyFooter
from dflash_tui.app.keys.table import MAIN_BINDINGS
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.app.widgets.waits import WaitBar

# The panes whose widgets are kept: the one shown and the last three shown before it. Going
# back and forth between a few hosts (`[`, `]`, comparing two or three) finds their widgets
# there, with nothing to make again; a user who looks at every one of 64 hosts keeps four sets
# of ~40 widgets, not 64 (bench/README.md, "Many hosts in the app").
PANES_KEPT = 4


class MainScreen(Screen[None], inherit_bindings=False):
    # Not inherited: Screen binds tab first, which would put "tab Areas" first in the footer.
    BINDINGS: ClassVar[list[BindingType]] = list(MAIN_BINDINGS)

    def __init__(
        self, hosts: Sequence[str], read_only: bool, on_filter: Callable[[str], None]
    ) -> None:
        """``on_filter``: called with the log filter's text once it is submitted."""
        super().__init__(id="main")
        self.hosts, self.read_only, self.on_filter = tuple(hosts), read_only, on_filter
        # Kept as made: every sample of every host reaches its pane, so no DOM search per
        # sample. Only the first host's widgets are made now; another's when it is first shown.
        self.panes = [HostPane(h, i, read_only, built=i == 0) for i, h in enumerate(self.hosts)]
        self.recent = [0]  # the panes with widgets, the one shown last
        self.overview = HostOverview() if len(self.hosts) > 1 else None

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
        if self.overview is None:
            yield self.panes[0]
        else:
            yield self.overview
            with ContentSwitcher(id="hosts", initial=pane_id(0)):
                yield from self.panes
        yield WaitBar()
        yield KeyFooter(compact=len(self.hosts) > 1)  # one more key to fit in 120 columns

    def pane(self, index: int) -> HostPane | None:
        """Where the detail widgets of host ``index`` live; None once that pane is gone."""
        pane = self.panes[index] if 0 <= index < len(self.panes) else None
        return pane if pane is not None and pane.is_attached else None

    async def show_pane(self, index: int) -> None:
        """Show host ``index``'s pane, its widgets made if they are not there (the first
        time, or removed since), and remove those of the pane shown least recently once more
        than ``PANES_KEPT`` have them."""
        if len(self.hosts) > 1:
            pane = self.panes[index]
            await pane.build()
            self.query_one("#hosts", ContentSwitcher).current = pane_id(index)
            pane.catch_up()  # what it did not draw while another host was shown
            self.recent = [i for i in self.recent if i != index] + [index]
            while len(self.recent) > PANES_KEPT:
                # Hidden now: nothing draws on it while its widgets go.
                await self.panes[self.recent.pop(0)].drop()

    def on_wait_bar_toggled(self, msg: WaitBar.Toggled) -> None:
        msg.stop()
        # Once laid out: each shown log area draws its following tails to their ends again.
        self.call_after_refresh(self._wake_logs)

    def _wake_logs(self) -> None:
        for area in self.query(LogArea):
            area.wake()

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
