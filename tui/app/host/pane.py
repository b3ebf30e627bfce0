"""One host's detail view. ``HostPane`` composes that host's header, GPU grid, metrics, logs,
findings, process tree, timeline and history, and owns how the host's sample, link state and
auto-restart state are drawn on them (as Posting's ResponseArea owns its response's display):
the app hands it what to draw and never reaches into its widgets.

Its widgets are made when the host is first shown, and removed again when a few other hosts
were shown since (``drop``; tui/app/screens/main.py keeps the latest few): 64 hosts must not
cost 64 sets of ~40 widgets when one is on screen, not even once every host was looked at.
Whenever another host is shown, a sample is only folded into the pane's store
(tui/app/host/store.py) and kept as the latest; shown, the pane draws from them (``catch_up``),
with widgets made again if they were removed. So do the right-hand tabs after the process tree
(Timeline, History, GPU procs): each one's view is made the first time it is shown, from the
same store. What the keys set on the widgets (the tab shown, the log filter and follow mode,
compact GPUs, ...) is kept by the pane while they are gone (``ViewKept``).

It guards itself: a pane that is not mounted yet, is being removed or is gone, or whose app is
shutting down draws nothing and raises nothing, because a sample, a link tick or a supervisor's
report can still arrive while the app exits. While it can draw, a panel that fails is
reported once through the app's draw guard (tui/app/widgets/themed.py) and the others still draw.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from dflash_tui.app import heap
from dflash_tui.app.host.findings.panel import FindingsList, TimelineList
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.area import LogArea, LogSettings
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.metrics import MetricsStrip
from dflash_tui.app.host.procs.tree import ProcInfo, ProcTree
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.state import HostState
from dflash_tui.app.host.store import PaneStore
from dflash_tui.app.host.strip import HostStrip
from dflash_tui.app.host.zoom import Zoom
from dflash_tui.app.widgets.removal import let_go_of_lines
from dflash_tui.app.widgets.themed import draw_guarded
from dflash_tui.core.diagnosis.finding import Finding, duration
from dflash_tui.core.diagnosis.history import View
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.views import Diagnosis

if TYPE_CHECKING:  # imported with their tab's view, the first time it is shown (_tab_view)
    from dflash_tui.app.host.history.view import HistoryView
    from dflash_tui.app.host.procs.gpu_table import GpuProcView

# The owners whose processes a GPU finding is about (the PID it names, for the tree).
_NAMED_OWNER = {"orphan-process": "orphan", "foreign-process": "foreign"}


def named_pid(diag: Diagnosis, finding: Finding) -> int | None:
    """The PID (in the probe's view, as the tree keys it) a finding is about, if any: the
    first orphan of an orphan-process finding, the first foreign process of a foreign one."""
    owner = _NAMED_OWNER.get(finding.code)
    for view in diag.gpus:
        if owner is None or view.index not in finding.gpus:
            continue
        for p in view.processes:
            if p.owner == owner:
                return p.container_pid if p.container_pid is not None else p.pid
    return None


# The right-hand tabs after the process tree: (id, label), in the order `e` goes through them.
LATER_TABS = (
    ("tab-timeline", "Timeline"),
    ("tab-history", "History"),
    ("tab-gpuprocs", "GPU procs"),
)

STALE_TICK_S = 1.0  # while stale, the age shown counts up by this much


def stale_after(interval: float) -> float:
    """Seconds without a sample after which the data shown is stale: the next sample was due
    one interval after the last; half an interval more (at least 0.5 s) allows for jitter."""
    return interval + max(interval / 2, 0.5)


def post_events(pane: HostPane | None, state: HostState, events: list[Event]) -> None:
    """Events of the app's own (auto-restart, alerts) on the host's timeline, in time order,
    and on its pane while it is there."""
    state.timeline.add(events)
    if pane is not None:
        pane.add_events(events)


@dataclass
class ViewKept:
    """What a pane's keys set on its widgets, kept while they are removed and set on the ones
    made again. Not kept, each a widget's own and reset on a rebuild as when first made: the
    selected process and which branches of the tree are open, the finding under the cursor,
    the GPU process table's sort, filter and tags, the current search match, an open filter or
    search box, where the findings and the timeline are scrolled, the focus."""

    tab: str  # the right-hand tab shown
    logs: LogSettings  # the log filter, follow, wrap, search; paused tails' scroll offsets
    compact: bool | None  # the GPU grid's mode chosen with `c` (None: by the size)
    whole: bool  # the process tree shows the whole machine
    zoomed: tuple[str, str | None] | None  # the zoomed area's class (and a tail's log path)


def pane_id(index: int) -> str:
    return f"host-{index}"


class HostPane(Vertical):
    """The detail widgets of host ``index`` (id ``host-<index>``, class ``host-pane``).

    Its widgets are made when the host is first shown (``build``): until then the pane is one
    empty container, and every sample is only folded into its store. A pane not on screen
    draws nothing; shown again, it draws what its store and its latest sample say."""

    def __init__(self, host: str, index: int, read_only: bool, built: bool = False) -> None:
        """``built``: compose the widgets at once (the host shown at start)."""
        super().__init__(id=pane_id(index), classes="host-pane")
        self.host, self.index, self.read_only = host, index, read_only
        self.built = built
        self.store = PaneStore()  # what accumulates: sparklines, log lines, events, history
        self.latest: SampleReady | None = None  # the latest sample
        # Staleness: while the link is down or a sample is overdue, what is drawn is the
        # last known state, greyed and marked with its age; nothing is called healthy.
        self.sample_at: float | None = None  # time.monotonic() of the last sample
        self.interval: float | None = None  # the probe's interval (None: scripted, never due)
        self.link = "connecting"  # connecting | connected | down | idle (no job on a node)
        self.down_text = ""  # what the header says of the link while it is down
        self.down_findings: Sequence[Finding] = ()  # the findings shown with the link down
        self.auto = "off"  # auto-restart, as the header says it
        self.stale_s: int | None = None  # seconds since the last sample, while it is stale
        self._stale_due: Timer | None = None  # the next look at the age
        self._zoom_again: tuple[str, str | None] | None = None  # for ``catch_up``
        self.zoom = Zoom(self)
        self.tabs_made: set[str] = set()  # the LATER_TABS whose views are made
        self.kept_view: ViewKept | None = None  # while the widgets are removed (``drop``)
        self.history_view = View()  # the History's zoom and pan (its view may be remade)
        self._dropping: Awaitable[object] | None = None  # the widgets' removal under way
        self.body: Widget | None = None  # the container of the widgets, while they are there
        self._anchor: Widget | None = None  # made when the widgets are first removed (_let_go)

    @property
    def down(self) -> bool:
        """The link is down (a LinkDown came after the last sample)."""
        return self.link == "down"

    @property
    def diag(self) -> Diagnosis | None:
        """The latest sample's diagnosis, for what a finding names."""
        return self.latest.diagnosis if self.latest is not None else None

    def compose(self) -> ComposeResult:
        if self.built:
            yield from self._widgets()

    def _widgets(self, was: ViewKept | None = None) -> ComposeResult:
        """``was``: what the keys had set on the widgets removed last (None: first made)."""
        kept = self.store
        grid = GpuGrid(kept.panels)
        tree = ProcTree()
        if was is not None:
            grid.choice, tree.whole = was.compact, was.whole
        self.body = Vertical(classes="pane-body")
        with self.body:
            yield RunHeader(self.host, self.read_only)
            yield grid
            with Horizontal(id="lower"):
                with Vertical(id="left"):
                    yield MetricsStrip()
                    yield HostStrip()
                    yield LogArea(kept, self.read_only, was.logs if was is not None else None)
                with Vertical(id="right"):
                    yield FindingsList()
                    with TabbedContent(id="right-tabs"):
                        with TabPane("Processes", id="tab-procs"):
                            yield tree
                        # Empty until first shown (make_tab): their views are a dozen widgets,
                        # and the table's and the plots' modules, that most sessions never see.
                        for tab, label in LATER_TABS:
                            yield TabPane(label, id=tab)

    def _inner(self) -> Widget:
        """Where the pane's widgets are looked up: in the one container that holds them,
        whose lookups' cache goes with it when they are removed. A lookup on the pane itself
        would be cached on the pane (Textual keeps what a query found, by the pane's own
        children's count of changes), and keep every removed widget it found alive."""
        return self.body if self.body is not None else self

    def _tab_view(self, tab: str) -> Widget:
        """The view of a tab that is not made at start."""
        if tab == "tab-timeline":
            return TimelineList(self.store)
        if tab == "tab-history":
            from dflash_tui.app.host.history.view import HistoryView

            view = HistoryView(self.store)
            view.view = self.history_view  # as the keys left it on a view removed since
            return view
        from dflash_tui.app.host.procs.gpu_table import GpuProcView

        return GpuProcView()

    async def make_tab(self, tab: str) -> None:
        """Make tab ``tab``'s view if it is not made yet (awaited: the keys that act on it
        wait until it is there), and draw on it what it would show had it been made at
        start: the store's events, the latest sample's GPU processes (filled when shown)."""
        if tab in self.tabs_made or tab not in dict(LATER_TABS) or not self.alive:
            return
        self.tabs_made.add(tab)
        await self.tabs().get_pane(tab).mount(self._tab_view(tab))
        if tab == "tab-timeline":
            self._draw("timeline", lambda: self._inner().query_one(TimelineList).sync())
        elif tab == "tab-gpuprocs" and self.latest is not None:
            msg = self.latest
            self._draw("GPU processes", lambda: self.gpu_procs().show(msg.snapshot, msg.diagnosis))

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # A tab clicked in its bar (the keys make the view before they switch): its view is
        # made before the screen's handler, which reaches into it, hears of the switch.
        await self.make_tab(str(event.pane.id))

    async def show_tab(self, tab: str) -> None:
        """Switch the right-hand tabs to ``tab``, its view made first."""
        await self.make_tab(tab)
        self.tabs().active = tab

    async def build(self) -> None:
        """Make the widgets when the host is shown and they are not there (the first time,
        or removed since): awaited, the keys that act on them wait until they are there. Made
        again, they are as the keys left the ones removed (``ViewKept``)."""
        if self._dropping is not None:
            await self._dropping  # the same ids must be free again
        if self.built or not self.alive:
            return
        self.built = True
        was, self.kept_view = self.kept_view, None
        await self.mount_compose(self._widgets(was))
        if was is not None and was.tab != "tab-procs":
            await self.show_tab(was.tab)
        self._zoom_again = was.zoomed if was is not None else None

    async def drop(self) -> None:
        """Remove the widgets of a pane not shown (other hosts were shown since): what they
        draw is the store's, and what the keys set on them is kept (``ViewKept``) for the
        ones ``build`` makes when the host is shown again. From the start of the removal
        nothing is drawn on them (``built`` is False): a sample that comes meanwhile is only
        folded into the store, as for a host never shown."""
        if not self.built or not self.alive or self.display:
            return
        self.kept_view = self._keep_view()  # what its tails drew goes back to their stores
        self.store.shelve()  # no widget holds a log's lines now
        self.zoom.off()  # its classes are on the screen's containers too
        self.built = False
        self.tabs_made = set()
        self._look_again(None)
        self.stale_s = None
        self._zoom_again = None
        body, self.body = self.body, None
        if body is not None:
            let_go_of_lines(body)
        self._dropping = removal = body.remove() if body is not None else None
        try:
            if removal is not None:
                await removal
        finally:
            if self._dropping is removal:
                self._dropping = None
        self._let_go()

    def _let_go(self) -> None:
        """Textual keeps, on the pane, the arrangement of its children and the list of those
        shown until the pane is laid out again, which a hidden pane never is: the removed
        widgets would stay alive with both. A child's layout refresh clears its parent's
        arrangement (the anchor's: a child kept for this, never shown), and the list is made
        again when it is asked for."""
        if self._anchor is None or not self._anchor.is_attached:
            self._anchor = Widget(classes="pane-anchor")
            self.mount(self._anchor)
        self._anchor.refresh(layout=True)
        _ = self.displayed_children

    def _keep_view(self) -> ViewKept:
        zoomed = None
        area = self.zoom.area
        if area is not None:
            zoomed = (type(area).__name__, area.data.path if isinstance(area, LogTail) else None)
        if "tab-history" in self.tabs_made:
            self.history_view = self.history().view
        return ViewKept(
            tab=self.tabs().active or "tab-procs",
            logs=self.logs().keep(),
            compact=self.grid().choice,
            whole=self.procs().whole,
            zoomed=zoomed,
        )

    def _zoom_back(self) -> None:
        """The area zoomed when the widgets were removed, zoomed again on the new ones."""
        zoomed, self._zoom_again = self._zoom_again, None
        if zoomed is None or self.zoom.on:
            return
        kind, path = zoomed
        if path is not None:
            area: Widget | None = self.logs().tails.get(path)
        else:
            area = next((w for w in self._inner().query("*") if type(w).__name__ == kind), None)
        if area is not None:
            self.zoom.toggle(area)

    def on_unmount(self) -> None:
        self._look_again(None)

    def _look_again(self, delay: float | None) -> None:
        """Look at the age of the last sample in ``delay`` seconds (None: not at all), in
        place of any look planned: when the next sample is overdue, then at each whole second
        of age while stale. A one-shot timer re-armed with every sample drawn, not an
        interval: nothing wakes the app while samples come in time, nor for a hidden host."""
        if self._stale_due is not None:
            self._stale_due.stop()
        self._stale_due = None if delay is None else self.set_timer(delay, self.check_stale)

    def on_resize(self, _event: Resize) -> None:
        # The grid's mode depends on the pane's height too, which its own resize misses.
        if self.built:
            self._inner().query_one(GpuGrid).refit()

    @property
    def alive(self) -> bool:
        """Whether the pane is there to keep anything (its widgets made or not)."""
        if not (self.is_mounted and self.is_attached and self.app.is_running):
            return False
        # Removal marks the pane at once, before its children are closed one by one; Textual
        # has no public flag for it, and its own signal delivery checks these two.
        return not (self._closing or self._pruning)

    @property
    def can_draw(self) -> bool:
        """Whether anything drawn now would land on a live screen: the widgets are made,
        the pane is alive and on screen (not another host's turn)."""
        return self.built and self.display and self.alive

    # -- what the app hands over --

    def show_sample(self, msg: SampleReady) -> bool:
        """Keep one diagnosed sample, and draw it while shown; False when the pane is gone
        (nothing was kept)."""
        if not self.alive:
            return False
        snap, diag = msg.snapshot, msg.diagnosis
        self.store.fold(snap, diag, msg.events, shelve=not self.built)
        self.latest = msg
        self.sample_at, self.interval, self.link = time.monotonic(), diag.interval, "connected"
        if not self.can_draw:
            # Hidden: only what the store folded; the age is worked out when it is shown.
            self.stale_s = None
            return True
        heap.bound_style_codes()  # what the last draws added to Textual's style-code cache
        self._look_again(stale_after(diag.interval) if diag.interval else None)
        self._show_stale(None)  # before the findings: a fresh sample may say OK again
        header = self._inner().query_one(RunHeader)
        self._draw("header", lambda: header.show(diag, msg.job))
        self._draw_kept(diag)
        self._draw_latest(msg)
        return True

    def catch_up(self) -> None:
        """Shown (again): draw what the store and the latest sample say, and the link's and
        the age's state, as the samples, link losses and stale checks since it was last
        drawn would have left them."""
        if not self.can_draw:
            return
        msg = self.latest
        header = self._inner().query_one(RunHeader)
        if msg is not None:
            self._draw("header", lambda: header.show(msg.diagnosis, msg.job))
            # While the link is down the findings say so (with the latest sample's findings).
            self._draw_latest(msg, findings=not self.down)
        self._draw_kept(msg.diagnosis if msg is not None else None)
        if self.auto != header.auto:
            self._draw("header", lambda: header.show_auto(self.auto))
        if self.down:
            self._draw_down()
        elif self.link == "idle":
            header.show_link("idle", "")
        self.stale_s = None  # what is drawn now is fresh: the look below says otherwise
        self._paint_stale(None)
        self.check_stale()
        self.call_after_refresh(header.recheck)  # which problem GPUs are out of sight
        self._zoom_back()  # after the logs' sync: a zoomed tail is made again there

    def _draw_kept(self, diag: Diagnosis | None) -> None:
        """The views that draw what accumulates (kept by the store)."""
        self._draw("GPUs", lambda: self._inner().query_one(GpuGrid).sync(diag))
        self._draw("logs", lambda: self._inner().query_one(LogArea).sync())
        if "tab-timeline" in self.tabs_made:
            self._draw("timeline", lambda: self._inner().query_one(TimelineList).sync())

    def _draw_latest(self, msg: SampleReady, findings: bool = True) -> None:
        """The views that show only the latest sample (nothing of theirs accumulates)."""
        snap, diag = msg.snapshot, msg.diagnosis
        self._draw(
            "metrics", lambda: self._inner().query_one(MetricsStrip).show(msg.progress, msg.metrics)
        )
        self._draw("host", lambda: self._inner().query_one(HostStrip).show(diag, msg.progress))
        if findings:
            self._draw(
                "findings", lambda: self._inner().query_one(FindingsList).show(diag.findings)
            )
        self._draw("processes", lambda: self._inner().query_one(ProcTree).show(snap, diag))
        if "tab-gpuprocs" in self.tabs_made:
            self._draw("GPU processes", lambda: self.gpu_procs().show(snap, diag))

    def show_link_down(self, text: str, findings: Sequence[Finding]) -> None:
        """The link is down: the header and the findings say so, with the countdown."""
        self.link, self.down_text, self.down_findings = "down", text, tuple(findings)
        if self.can_draw:
            self.check_stale()
            self._draw_down()

    def _draw_down(self) -> None:
        # Not through the draw guard, as before: these two only format the text they are given.
        self._inner().query_one(RunHeader).show_link("down", self.down_text)
        note = f"probe link down: {self.down_text}"
        self._inner().query_one(FindingsList).show(self.down_findings, note=note)

    def show_no_job(self) -> None:
        """A Slurm node host whose job holds no node for it: the header says so; what the
        last sample showed stays, aged as any sample that is not followed by another."""
        self.link = "idle"
        if self.can_draw:
            self._inner().query_one(RunHeader).show_link("idle", "")
            self.check_stale()

    def check_stale(self) -> None:
        """From the first missed sample (or the link going down) the GPU panels, the tree
        and the findings are greyed and say how old they are, counting up each second."""
        if not self.can_draw:
            return  # worked out again when the host is shown
        age = None if self.sample_at is None else time.monotonic() - self.sample_at
        overdue = age is not None and bool(self.interval) and age >= stale_after(self.interval or 0)
        stale = (self.down or overdue) and age is not None
        self._show_stale(int(age) if stale and age is not None else None)
        if stale and age is not None:  # the next whole second of age
            self._look_again(STALE_TICK_S - age % STALE_TICK_S + 0.01)
        elif self.interval and age is not None:  # looked before it was due: look again then
            self._look_again(stale_after(self.interval) - age + 0.01)
        if self.down and age is None:  # down before any sample: still nothing is called OK
            self._inner().query_one(FindingsList).show_stale(None, down=True)

    def _show_stale(self, age: int | None) -> None:
        if age == self.stale_s and self.stale_s is None:
            return
        self.stale_s = age
        self._paint_stale(age)

    def _paint_stale(self, age: int | None) -> None:
        self._draw("header", lambda: self._inner().query_one(RunHeader).show_stale(age))
        self._draw("GPUs", lambda: self._inner().query_one(GpuGrid).show_stale(age))
        self._draw("processes", lambda: self._inner().query_one(ProcTree).show_stale(age))
        self._draw(
            "findings", lambda: self._inner().query_one(FindingsList).show_stale(age, self.down)
        )
        self._label_procs()

    def toggle_whole_machine(self) -> None:
        """The tree: the run's processes and GPU holders, or every process of the host."""
        if self.can_draw:
            self._draw("processes", self._inner().query_one(ProcTree).toggle_whole)
            self._label_procs()

    def _label_procs(self) -> None:
        """The tree's tab says what it shows (``all``: the whole machine) and how old it is."""
        label = "Processes" + (" · all" if self._inner().query_one(ProcTree).whole else "")
        if self.stale_s is not None:
            label += f" · stale {duration(self.stale_s)}"
        self.tabs().get_tab("tab-procs").label = label

    def show_auto(self, auto: str) -> None:
        """The header's auto-restart state: off | on | fatal."""
        self.auto = auto
        if self.can_draw:
            self._draw("header", lambda: self._inner().query_one(RunHeader).show_auto(auto))

    def add_events(self, events: Sequence[Event]) -> None:
        """Events that did not come with a sample (auto-restart's decisions)."""
        self.store.add_events(events)
        if self.can_draw and "tab-timeline" in self.tabs_made:
            self._draw("timeline", lambda: self._inner().query_one(TimelineList).sync())

    def on_findings_list_picked(self, msg: FindingsList.Picked) -> None:
        """A finding entered: select the process it names in the tree (so K is the next key),
        else show the GPUs it names."""
        msg.stop()
        finding = msg.finding
        pid = named_pid(self.diag, finding) if self.diag is not None else None
        if pid is not None:
            self.tabs().active = "tab-procs"
            tree = self._inner().query_one(ProcTree)
            if tree.select_pid(pid):
                tree.focus()
                return
        grid = self._inner().query_one(GpuGrid)
        if finding.gpus and grid.pick(finding.gpus):
            grid.focus()
            return
        self.app.notify(f"{finding.code} names no GPU or process shown here", timeout=3)

    # -- the views the keys act on --

    def logs(self) -> LogArea:
        return self._inner().query_one(LogArea)

    def procs(self) -> ProcTree:
        return self._inner().query_one(ProcTree)

    def history(self) -> HistoryView:
        """The History tab's view (made when the tab is first shown)."""
        from dflash_tui.app.host.history.view import HistoryView

        return self._inner().query_one(HistoryView)

    def gpu_procs(self) -> GpuProcView:
        """The GPU process table's view (made when its tab is first shown)."""
        from dflash_tui.app.host.procs.gpu_table import GpuProcView

        return self._inner().query_one(GpuProcView)

    def grid(self) -> GpuGrid:
        return self._inner().query_one(GpuGrid)

    def on_gpu_grid_reflowed(self, msg: GpuGrid.Reflowed) -> None:
        msg.stop()
        self.call_after_refresh(self._inner().query_one(RunHeader).recheck)

    def toggle_compact(self) -> bool:
        """The GPU grid: one line per GPU / full panels (`c`); True when compact now. The
        header names the problem GPUs out of sight again once the grid is laid out."""
        compact = self.grid().toggle_compact()
        self.call_after_refresh(self._inner().query_one(RunHeader).recheck)
        return compact

    async def show_gpu_procs(self) -> None:
        """The GPU process table (`p`), with the focus on it."""
        await self.show_tab("tab-gpuprocs")
        self.call_after_refresh(self.gpu_procs().table.focus)

    def kill_targets(self) -> tuple[list[ProcInfo], list[int]]:
        """What K acts on: with the GPU process table shown, its tagged rows (else the row
        under its cursor); else the tree's selected process. The PIDs the probe does not see
        come second (control cannot verify them)."""
        if self.tabs().active == "tab-gpuprocs" and "tab-gpuprocs" in self.tabs_made:
            return self.gpu_procs().selected_infos()
        info = self.procs().selected()
        return ([info] if info is not None else []), []

    async def next_tab(self) -> None:
        """Processes, Timeline, History, GPU procs, then Processes again (`e`)."""
        order = ("tab-procs", *(tab for tab, _ in LATER_TABS))
        active = self.tabs().active
        at = order.index(active) if active in order else -1
        await self.show_tab(order[(at + 1) % len(order)])

    def history_shown(self) -> bool:
        return (
            self.can_draw
            and "tab-history" in self.tabs_made
            and self.tabs().active == "tab-history"
        )

    def tabs(self) -> TabbedContent:
        return self._inner().query_one("#right-tabs", TabbedContent)

    def _draw(self, what: str, draw: Callable[[], None]) -> None:
        draw_guarded(self, what, draw)
