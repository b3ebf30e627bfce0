"""One host's detail view. ``HostPane`` composes that host's header, GPU grid, metrics, logs,
findings, process tree, timeline and history, and owns how the host's sample, link state and
auto-restart state are drawn on them (as Posting's ResponseArea owns its response's display):
the app hands it what to draw and never reaches into its widgets.

Its widgets are made when the host is first shown: 64 hosts must not cost 64 sets of ~40
widgets when one is on screen. Until then, and whenever another host is shown, a sample is only
folded into the pane's store (tui/app/host/store.py) and kept as the latest; shown, the pane
draws from them (``catch_up``). So do the right-hand tabs after the process tree (Timeline,
History, GPU procs): each one's view is made the first time it is shown, from the same store.

It guards itself: a pane that is not mounted yet, is being removed or is gone, or whose app is
shutting down draws nothing and raises nothing, because a sample, a link tick or a supervisor's
report can still arrive while the app exits. While it can draw, a panel that fails is
reported once through the app's draw guard (tui/app/widgets/themed.py) and the others still draw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.metrics import MetricsStrip
from dflash_tui.app.host.procs.tree import ProcInfo, ProcTree
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.state import HostState
from dflash_tui.app.host.store import PaneStore
from dflash_tui.app.host.strip import HostStrip
from dflash_tui.app.host.zoom import Zoom
from dflash_tui.app.widgets.themed import draw_guarded
from dflash_tui.core.diagnosis.finding import Finding, duration
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
        self.zoom = Zoom(self)
        self.tabs_made: set[str] = set()  # the LATER_TABS whose views are made

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

    def _widgets(self) -> ComposeResult:
        kept = self.store
        yield RunHeader(self.host, self.read_only)
        yield GpuGrid(kept.panels)
        with Horizontal(id="lower"):
            with Vertical(id="left"):
                yield MetricsStrip()
                yield HostStrip()
                yield LogArea(kept, self.read_only)
            with Vertical(id="right"):
                yield FindingsList()
                with TabbedContent(id="right-tabs"):
                    with TabPane("Processes", id="tab-procs"):
                        yield ProcTree()
                    # Empty until first shown (make_tab): their views are a dozen widgets,
                    # and the table's and the plots' modules, that most sessions never see.
                    for tab, label in LATER_TABS:
                        yield TabPane(label, id=tab)

    def _tab_view(self, tab: str) -> Widget:
        """The view of a tab that is not made at start."""
        if tab == "tab-timeline":
            return TimelineList(self.store)
        if tab == "tab-history":
            from dflash_tui.app.host.history.view import HistoryView

            return HistoryView(self.store)
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
            self._draw("timeline", lambda: self.query_one(TimelineList).sync())
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
        """Make the widgets, the first time the host is shown (awaited: the keys that act on
        them wait until they are there)."""
        if self.built or not self.alive:
            return
        self.built = True
        await self.mount_compose(self._widgets())

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
            self.query_one(GpuGrid).refit()

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
        self.store.fold(snap, diag, msg.events)
        self.latest = msg
        self.sample_at, self.interval, self.link = time.monotonic(), diag.interval, "connected"
        if not self.can_draw:
            # Hidden: only what the store folded; the age is worked out when it is shown.
            self.stale_s = None
            return True
        heap.bound_style_codes()  # what the last draws added to Textual's style-code cache
        self._look_again(stale_after(diag.interval) if diag.interval else None)
        self._show_stale(None)  # before the findings: a fresh sample may say OK again
        header = self.query_one(RunHeader)
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
        header = self.query_one(RunHeader)
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

    def _draw_kept(self, diag: Diagnosis | None) -> None:
        """The views that draw what accumulates (kept by the store)."""
        self._draw("GPUs", lambda: self.query_one(GpuGrid).sync(diag))
        self._draw("logs", lambda: self.query_one(LogArea).sync())
        if "tab-timeline" in self.tabs_made:
            self._draw("timeline", lambda: self.query_one(TimelineList).sync())

    def _draw_latest(self, msg: SampleReady, findings: bool = True) -> None:
        """The views that show only the latest sample (nothing of theirs accumulates)."""
        snap, diag = msg.snapshot, msg.diagnosis
        self._draw("metrics", lambda: self.query_one(MetricsStrip).show(msg.progress, msg.metrics))
        self._draw("host", lambda: self.query_one(HostStrip).show(diag, msg.progress))
        if findings:
            self._draw("findings", lambda: self.query_one(FindingsList).show(diag.findings))
        self._draw("processes", lambda: self.query_one(ProcTree).show(snap, diag))
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
        self.query_one(RunHeader).show_link("down", self.down_text)
        note = f"probe link down: {self.down_text}"
        self.query_one(FindingsList).show(self.down_findings, note=note)

    def show_no_job(self) -> None:
        """A Slurm node host whose job holds no node for it: the header says so; what the
        last sample showed stays, aged as any sample that is not followed by another."""
        self.link = "idle"
        if self.can_draw:
            self.query_one(RunHeader).show_link("idle", "")
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
            self.query_one(FindingsList).show_stale(None, down=True)

    def _show_stale(self, age: int | None) -> None:
        if age == self.stale_s and self.stale_s is None:
            return
        self.stale_s = age
        self._paint_stale(age)

    def _paint_stale(self, age: int | None) -> None:
        self._draw("header", lambda: self.query_one(RunHeader).show_stale(age))
        self._draw("GPUs", lambda: self.query_one(GpuGrid).show_stale(age))
        self._draw("processes", lambda: self.query_one(ProcTree).show_stale(age))
        self._draw("findings", lambda: self.query_one(FindingsList).show_stale(age, self.down))
        self._label_procs()

    def toggle_whole_machine(self) -> None:
        """The tree: the run's processes and GPU holders, or every process of the host."""
        if self.can_draw:
            self._draw("processes", self.query_one(ProcTree).toggle_whole)
            self._label_procs()

    def _label_procs(self) -> None:
        """The tree's tab says what it shows (``all``: the whole machine) and how old it is."""
        label = "Processes" + (" · all" if self.query_one(ProcTree).whole else "")
        if self.stale_s is not None:
            label += f" · stale {duration(self.stale_s)}"
        self.tabs().get_tab("tab-procs").label = label

    def show_auto(self, auto: str) -> None:
        """The header's auto-restart state: off | on | fatal."""
        self.auto = auto
        if self.can_draw:
            self._draw("header", lambda: self.query_one(RunHeader).show_auto(auto))

    def add_events(self, events: Sequence[Event]) -> None:
        """Events that did not come with a sample (auto-restart's decisions)."""
        self.store.add_events(events)
        if self.can_draw and "tab-timeline" in self.tabs_made:
            self._draw("timeline", lambda: self.query_one(TimelineList).sync())

    def on_findings_list_picked(self, msg: FindingsList.Picked) -> None:
        """A finding entered: select the process it names in the tree (so K is the next key),
        else show the GPUs it names."""
        msg.stop()
        finding = msg.finding
        pid = named_pid(self.diag, finding) if self.diag is not None else None
        if pid is not None:
            self.tabs().active = "tab-procs"
            tree = self.query_one(ProcTree)
            if tree.select_pid(pid):
                tree.focus()
                return
        grid = self.query_one(GpuGrid)
        if finding.gpus and grid.pick(finding.gpus):
            grid.focus()
            return
        self.app.notify(f"{finding.code} names no GPU or process shown here", timeout=3)

    # -- the views the keys act on --

    def logs(self) -> LogArea:
        return self.query_one(LogArea)

    def procs(self) -> ProcTree:
        return self.query_one(ProcTree)

    def history(self) -> HistoryView:
        """The History tab's view (made when the tab is first shown)."""
        from dflash_tui.app.host.history.view import HistoryView

        return self.query_one(HistoryView)

    def gpu_procs(self) -> GpuProcView:
        """The GPU process table's view (made when its tab is first shown)."""
        from dflash_tui.app.host.procs.gpu_table import GpuProcView

        return self.query_one(GpuProcView)

    def grid(self) -> GpuGrid:
        return self.query_one(GpuGrid)

    def on_gpu_grid_reflowed(self, msg: GpuGrid.Reflowed) -> None:
        msg.stop()
        self.call_after_refresh(self.query_one(RunHeader).recheck)

    def toggle_compact(self) -> bool:
        """The GPU grid: one line per GPU / full panels (`c`); True when compact now. The
        header names the problem GPUs out of sight again once the grid is laid out."""
        compact = self.grid().toggle_compact()
        self.call_after_refresh(self.query_one(RunHeader).recheck)
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
        return self.query_one("#right-tabs", TabbedContent)

    def _draw(self, what: str, draw: Callable[[], None]) -> None:
        draw_guarded(self, what, draw)
