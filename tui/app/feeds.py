"""The feed side of the app: one exclusive worker per host (group ``feed:<index>``, so a host
whose link is down, or whose SSH connect hangs, never holds up another) turns that host's feed
events into typed messages carrying the host's key; the handlers draw each host into its own
pane and keep the overview's row of that host current."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

from dflash_tui.app.findings.panel import FindingsList, TimelineList
from dflash_tui.app.gpus.grid import GpuGrid
from dflash_tui.app.header import RunHeader
from dflash_tui.app.hosts import HostState, summarize
from dflash_tui.app.logs.area import LogArea
from dflash_tui.app.messages import LinkDown, SampleMalformed, SampleReady
from dflash_tui.app.overview import HostOverview
from dflash_tui.app.procs.tree import ProcTree
from dflash_tui.app.progress_strip import MetricsStrip
from dflash_tui.app.source import Disconnected, Malformed
from dflash_tui.core.base.snapshot import Snapshot

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from dflash_tui.app.app import DflashApp

    _Base = DflashApp
else:
    _Base = object

FEED_GROUP = "feed:"
RESTART_AFTER = 2.0  # seconds before a crashed sample reader is started again


def feed_group(state: HostState) -> str:
    return f"{FEED_GROUP}{state.index}"


class HostFeeds(_Base):
    def _start_feeds(self) -> None:
        for state in self.host_states:
            if state.source is None:
                state.source = state.live_source(self.cfg.interval)
            self._start_feed(state)
        self.set_interval(1.0, self._tick_links)  # the retry countdown of hosts that are down

    def _start_feed(self, state: HostState) -> None:
        self.run_worker(
            self._consume(state),
            name=f"feed {state.key}",
            group=feed_group(state),
            exclusive=True,
            exit_on_error=False,
        )

    async def _consume(self, state: HostState) -> None:
        """Every feed event becomes one message; diagnosis runs in a thread (big samples)."""
        assert state.source is not None
        async for ev in state.source.events():
            if isinstance(ev, Snapshot):
                try:
                    msg = await asyncio.to_thread(state.fold, ev)
                except Exception as exc:  # a bug in diagnosis must not end the feed
                    self.post_message(SampleMalformed(state.key, f"diagnosis failed: {exc!r}"))
                    continue
                # Backpressure: take this host's next sample only once this one is drawn, so
                # a flood never queues ahead of the user's keys.
                state.drawn.clear()
                self.post_message(msg)
                await state.drawn.wait()
            elif isinstance(ev, Disconnected):
                self.post_message(LinkDown(state.key, ev.error, ev.retry_in))
            elif isinstance(ev, Malformed):
                self.post_message(SampleMalformed(state.key, ev.error))

    async def _stop_feeds(self) -> None:
        """Stop every probe before the loop closes (the runs themselves are never touched)."""
        for w in self.workers:
            if w.group.startswith(FEED_GROUP):
                w.cancel()
        for state in self.host_states:
            await state.close()

    def _feed_state_changed(self, event: Worker.StateChanged) -> None:
        group = event.worker.group
        if not group.startswith(FEED_GROUP) or event.state != WorkerState.ERROR:
            return
        state = self.host_states[int(group[len(FEED_GROUP) :])]
        err = f"the sample reader stopped: {event.worker.error!r}; restarting"
        self.post_message(LinkDown(state.key, err, RESTART_AFTER))
        self.set_timer(RESTART_AFTER, lambda: self._start_feed(state))

    # -- drawing --

    def on_sample_ready(self, msg: SampleReady) -> None:
        state = self.state_of(msg.host)
        try:
            self._draw_sample(state, msg)
        finally:
            state.drawn.set()

    def _draw_sample(self, state: HostState, msg: SampleReady) -> None:
        state.last = msg
        state.link_up()
        snap, diag = msg.snapshot, msg.diagnosis
        pane = self.pane_of(state)
        self._safely("header", lambda: pane.query_one(RunHeader).show(diag))
        self._safely("GPUs", lambda: pane.query_one(GpuGrid).show(diag))
        self._safely(
            "metrics", lambda: pane.query_one(MetricsStrip).show(msg.progress, msg.metrics)
        )
        self._safely("logs", lambda: pane.query_one(LogArea).show(snap.logs, diag))
        self._safely("findings", lambda: pane.query_one(FindingsList).show(diag.findings))
        self._safely("processes", lambda: pane.query_one(ProcTree).show(snap, diag))
        self._safely("timeline", lambda: pane.query_one(TimelineList).add(msg.events))
        self._safely("overview", self.refresh_overview)
        for ev in msg.events:
            if ev.kind in ("crash", "launch-failed"):
                title = self.host_title(state, "run crashed")
                self.notify(ev.text, title=title, severity="error", timeout=15)
        state.samples += 1
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
        state = self.state_of(msg.host)
        state.link_down(msg.error, msg.retry_in)
        self._show_link(state)
        self.refresh_overview()

    def _show_link(self, state: HostState) -> None:
        text = state.link_text() or ""
        pane = self.pane_of(state)
        pane.query_one(RunHeader).show_link("down", text)
        findings = state.last.diagnosis.findings if state.last else ()
        pane.query_one(FindingsList).show(findings, note=f"probe link down: {text}")

    def _tick_links(self) -> None:
        down = [state for state in self.host_states if state.link == "down"]
        for state in down:
            self._show_link(state)
        if down:  # the overview draws every host: once a tick, not once per host down
            self.refresh_overview()

    def on_sample_malformed(self, msg: SampleMalformed) -> None:
        title = self.host_title(self.state_of(msg.host), "unreadable sample")
        self.notify(msg.error[:300], title=title, severity="warning", timeout=5)

    # -- where each host is drawn --

    def state_of(self, key: str) -> HostState:
        return next(s for s in self.host_states if s.key == key)

    def pane_of(self, state: HostState) -> DOMNode:
        return self.get_screen_main().pane(state.index)

    def host_title(self, state: HostState, title: str) -> str:
        """Notification titles name the host once there are several."""
        return f"{state.key}: {title}" if len(self.host_states) > 1 else title

    def refresh_overview(self) -> None:
        if len(self.host_states) < 2:
            return
        rows = [summarize(s) for s in self.host_states]
        self.get_screen_main().query_one(HostOverview).show(rows, self.selected)
