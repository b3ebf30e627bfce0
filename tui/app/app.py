"""The dflash-tui app: one exclusive worker turns feed events into typed messages; widgets
only render what those messages carry; keys call run control (tui/app/actions.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.widgets import TabbedContent
from textual.worker import Worker, WorkerState

from tui.app.actions import ControlActions
from tui.app.findings.panel import FindingsList, TimelineList
from tui.app.findings.timeline import Timeline
from tui.app.gpus.grid import GpuGrid
from tui.app.header import RunHeader
from tui.app.layout import DESTRUCTIVE, KEY_NAMES, KEYS, MainScreen
from tui.app.logs.area import LogArea
from tui.app.messages import LinkDown, SampleMalformed, SampleReady
from tui.app.metrics import MetricsStrip
from tui.app.procs.tree import ProcTree
from tui.app.screens import HelpScreen
from tui.app.source import Disconnected, EventSource, Malformed
from tui.app.themes import BUNDLED, DEFAULT_THEME, discover
from tui.core.config import Config
from tui.core.snapshot import Snapshot
from tui.core.tracker import Tracker

QUIT_NOTE = "q quits the app only: the run keeps running, and dflash-tui re-attaches to it."


class DflashApp(ControlActions, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "dflash-tui"

    def __init__(
        self,
        cfg: Config,
        *,
        source: EventSource | None = None,
        control: object | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.host = cfg.host
        self.read_only = cfg.read_only
        self.source = source
        self.tracker = Tracker(self.host.topology)
        self.timeline = Timeline()
        self.last: SampleReady | None = None
        self.samples = 0  # samples rendered (tests wait on this)
        self.link_error: str | None = None
        self.theme_errors: list[str] = []
        self.draw_errors: set[str] = set()
        self._drawn = asyncio.Event()
        self.theme_names: list[str] = []
        self._init_control(control)
        self._register_themes()

    # -- themes --

    def _register_themes(self) -> None:
        themes, self.theme_errors = discover()
        for theme in themes:
            self.register_theme(theme)
        names = [t.name for t in themes]
        self.theme_names = [n for n in BUNDLED if n in names] + [
            n for n in names if n not in BUNDLED
        ]

    def _apply_start_theme(self) -> None:
        wanted = self.cfg.theme or DEFAULT_THEME
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            self.theme_errors.append(
                f"theme {wanted!r} not found; using {DEFAULT_THEME} "
                f"(available: {', '.join(self.theme_names)})"
            )
            if DEFAULT_THEME in self.available_themes:
                self.theme = DEFAULT_THEME
        for err in self.theme_errors:
            self.notify(err, title="theme", severity="warning", timeout=8)

    def action_next_theme(self) -> None:
        names = self.theme_names or [self.theme]
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2)

    # -- screen and data flow --

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.host.label, self.read_only)

    def on_mount(self) -> None:
        self._apply_start_theme()
        if self.source is None:
            self.source = self._live_source()
        # After the first refresh every composed widget (tab panes too) is mounted.
        self.call_after_refresh(self.consume)

    async def on_unmount(self) -> None:
        """Stop the probe before the loop closes (the run itself is never touched)."""
        for w in self.workers:
            if w.group == "feed":
                w.cancel()
        if self.source is not None:
            await self.source.close()

    def _live_source(self) -> EventSource:
        from tui.app.source import LiveSource

        return LiveSource(self.transport, self.host, self.cfg.interval)

    @work(exclusive=True, group="feed", exit_on_error=False)
    async def consume(self) -> None:
        """Every feed event becomes one message; diagnosis runs in a thread (big samples)."""
        assert self.source is not None
        async for ev in self.source.events():
            if isinstance(ev, Snapshot):
                try:
                    msg = await asyncio.to_thread(self._fold, ev)
                except Exception as exc:  # a bug in diagnosis must not end the feed
                    self.post_message(SampleMalformed(f"diagnosis failed: {exc!r}"))
                    continue
                # Backpressure: take the next sample only once this one is drawn, so a flood
                # never queues ahead of the user's keys.
                self._drawn.clear()
                self.post_message(msg)
                await self._drawn.wait()
            elif isinstance(ev, Disconnected):
                self.post_message(LinkDown(ev.error, ev.retry_in))
            elif isinstance(ev, Malformed):
                self.post_message(SampleMalformed(ev.error))

    def _fold(self, snap: Snapshot) -> SampleReady:
        diag = self.tracker.add(snap)
        events = tuple(self.timeline.fold(snap, diag))
        return SampleReady(
            snap, diag, self.tracker.progress, tuple(self.tracker.metrics)[-200:], events
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "feed" and event.state == WorkerState.ERROR:
            err = f"the sample reader stopped: {event.worker.error!r}; restarting"
            self.post_message(LinkDown(err, 2.0))
            self.set_timer(2.0, self.consume)
        self._control_state_changed(event)

    def on_sample_ready(self, msg: SampleReady) -> None:
        try:
            self._draw_sample(msg)
        finally:
            self._drawn.set()

    def _draw_sample(self, msg: SampleReady) -> None:
        self.last, self.link_error = msg, None
        snap, diag = msg.snapshot, msg.diagnosis
        screen = self.get_screen_main()
        self._safely("header", lambda: screen.query_one(RunHeader).show(diag))
        self._safely("GPUs", lambda: screen.query_one(GpuGrid).show(diag))
        self._safely(
            "metrics", lambda: screen.query_one(MetricsStrip).show(msg.progress, msg.metrics)
        )
        self._safely("logs", lambda: screen.query_one(LogArea).show(snap.logs, diag))
        self._safely("findings", lambda: screen.query_one(FindingsList).show(diag.findings))
        self._safely("processes", lambda: screen.query_one(ProcTree).show(snap, diag))
        self._safely("timeline", lambda: screen.query_one(TimelineList).add(msg.events))
        for ev in msg.events:
            if ev.kind in ("crash", "launch-failed"):
                self.notify(ev.text, title="run crashed", severity="error", timeout=15)
        self.samples += 1

    def _safely(self, what: str, draw: Callable[[], None]) -> None:
        """One broken panel must not end the supervision: report it once, keep the rest."""
        try:
            draw()
        except Exception as exc:
            if what not in self.draw_errors:
                self.draw_errors.add(what)
                self.log.error(f"drawing {what} failed", exc)
                self.notify(f"drawing {what} failed: {exc!r}", severity="error", timeout=15)

    def on_link_down(self, msg: LinkDown) -> None:
        self.link_error = f"{msg.error} (retrying in {msg.retry_in:.0f}s)"
        screen = self.get_screen_main()
        screen.query_one(RunHeader).show_link("down", self.link_error)
        findings = self.last.diagnosis.findings if self.last else ()
        screen.query_one(FindingsList).show(findings, note=f"probe link down: {self.link_error}")

    def on_sample_malformed(self, msg: SampleMalformed) -> None:
        self.notify(msg.error[:300], title="unreadable sample", severity="warning", timeout=5)

    def get_screen_main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise RuntimeError("main screen missing")

    # -- keys that only touch the view --

    def action_filter(self) -> None:
        self.get_screen_main().query_one(LogArea).open_filter()

    def apply_filter(self, text: str) -> None:
        area = self.get_screen_main().query_one(LogArea)
        try:
            area.apply_filter(text.strip())
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        area.close_filter()
        self.notify("log filter " + (f"/{area.filter_text}/" if area.filter_on else "off"))

    def action_toggle_filter(self) -> None:
        on = self.get_screen_main().query_one(LogArea).toggle_filter()
        self.notify("showing filtered lines" if on else "showing all lines", timeout=2)

    def action_follow(self) -> None:
        on = self.get_screen_main().query_one(LogArea).toggle_follow()
        self.notify("following the logs" if on else "follow paused", timeout=2)

    def action_other_tab(self) -> None:
        tabs = self.get_screen_main().query_one("#right-tabs", TabbedContent)
        tabs.active = "tab-timeline" if tabs.active == "tab-procs" else "tab-procs"

    def action_escape(self) -> None:
        area = self.get_screen_main().query_one(LogArea)
        if area.has_class("-filtering"):
            area.close_filter()
            self.get_screen_main().focus_next()
        elif self.waits_active():
            self.action_cancel_wait()

    def action_help(self) -> None:
        keys = [
            (KEY_NAMES.get(k, k), text)
            for k, action, _, text in KEYS
            if not (self.read_only and action in DESTRUCTIVE)
        ]
        keys.append(("esc", "close the filter box; cancel a wait (kill grace, release)"))
        keys.append(("ctrl+p", "command palette: every action by name"))
        notes = [QUIT_NOTE]
        if self.read_only:
            notes.append("Read-only mode: launch, kill, restart and kill-process are disabled.")
        self.push_screen(HelpScreen(keys, notes))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in DESTRUCTIVE:
            if self.read_only:
                return False  # hidden from the footer, the help and the palette
            if self.waits_active():
                return None  # shown greyed out while another action runs
        return True

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for _key, action, _text, helptext in KEYS:
            if action in ("focus_next", "quit") or (self.read_only and action in DESTRUCTIVE):
                continue
            title = action.replace("_", " ").capitalize()
            yield SystemCommand(title, helptext, getattr(self, f"action_{action}"))

    def quit_note(self) -> str:
        run = self.last.diagnosis.run if self.last else None
        state = self.last.diagnosis.run_state if self.last else "none"
        if run is not None and state in ("starting", "running"):
            return (
                f"dflash-tui: quit; run {run.id} keeps running (PID {run.pid}, PGID "
                f"{run.pgid}). Stop it with `dflash-tui kill`, or re-attach with `dflash-tui`."
            )
        return ""
