"""The feed side of the app: one exclusive worker per host (group ``feed:<index>``, so a host
whose link is down, or whose SSH connect hangs, never holds up another) turns that host's feed
events into typed messages carrying the host's key; the app hands each message here, which
keeps the host's state and has the host's pane (tui/app/host/pane.py) draw it, and keeps the
overview's row of that host current. The refresh key (``R``) samples every host at once
beside its stream; the sample goes through the same fold as the stream's, one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from textual.timer import Timer
from textual.worker import Worker, WorkerState

from dflash_tui.app import heap
from dflash_tui.app.host.alerts import AppAlerts
from dflash_tui.app.host.source import Disconnected, Malformed
from dflash_tui.app.host.state import HostState, summarize
from dflash_tui.app.messages import LinkDown, SampleMalformed, SampleReady
from dflash_tui.app.ports import AppPort
from dflash_tui.core.base.config import Config
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.transport import TransportError

FEED_GROUP = "feed:"
REFRESH_GROUP = "refresh:"
RESTART_AFTER = 2.0  # seconds before a crashed sample reader is started again


def feed_group(state: HostState) -> str:
    return f"{FEED_GROUP}{state.index}"


class FeedsApp(AppPort, Protocol):
    """What the feeds need from the app besides ``AppPort``."""

    samples: int  # samples drawn, all hosts together
    alerts: AppAlerts  # the app's own [alerts] (tui/app/host/alerts.py)

    @property
    def cfg(self) -> Config: ...

    def set_interval(
        self, interval: float, callback: Callable[[], object], *, pause: bool = False
    ) -> Timer: ...

    def draw_safely(self, what: str, draw: Callable[[], None]) -> None: ...

    def refresh_overview(self) -> None: ...


class HostFeeds:
    """Every host's feed worker, and what its messages do to the host's state and pane."""

    def __init__(self, app: FeedsApp) -> None:
        self.app = app
        self._folding: dict[int, asyncio.Lock] = {}  # per host: one sample folded at a time
        self._countdown: Timer | None = None  # ticks while a host is down (its retry countdown)

    def start(self) -> None:
        heap.tune_collector()  # the samples about to flow are most of what the app allocates
        for state in self.app.host_states:
            if state.source is None:
                state.source = state.live_source(self.app.cfg.interval, self.app.cfg.record)
            self._start_feed(state)
        # The retry countdown of hosts that are down; paused while none is (issue 16).
        self._countdown = self.app.set_interval(1.0, self.tick_links, pause=True)

    def _start_feed(self, state: HostState) -> None:
        self.app.run_worker(
            self._consume(state),
            name=f"feed {state.key}",
            group=feed_group(state),
            exclusive=True,
            exit_on_error=False,
        )

    async def _consume(self, state: HostState) -> None:
        """Every feed event becomes one message; diagnosis runs in a thread (big samples)."""
        assert state.source is not None
        post = self.app.post_message
        async for ev in state.source.events():
            if isinstance(ev, Snapshot):
                await self._fold(state, ev)
            elif isinstance(ev, Disconnected):
                post(LinkDown(state.key, ev.error, ev.retry_in))
            elif isinstance(ev, Malformed):
                post(SampleMalformed(state.key, ev.error))

    async def _fold(self, state: HostState, snap: Snapshot, refresh: bool = False) -> None:
        """Diagnose ``snap`` (in a thread: big samples) and have it drawn. One at a time per
        host: the tracker and the timeline take samples in order; a refresh sample older than
        the last one drawn (the stream's came first) is dropped."""
        async with self._folding.setdefault(state.index, asyncio.Lock()):
            last = state.snapshot
            if refresh and last is not None and snap.time <= last.time:
                return
            try:
                msg = await asyncio.to_thread(state.fold, snap)
            except Exception as exc:  # a bug in diagnosis must not end the feed
                self.app.post_message(SampleMalformed(state.key, f"diagnosis failed: {exc!r}"))
                return
            # Backpressure: take this host's next sample only once this one is drawn, so
            # a flood never queues ahead of the user's keys.
            state.drawn.clear()
            self.app.post_message(msg)
            await state.drawn.wait()

    def refresh_now(self) -> None:
        """Sample every host whose source can be asked (a live probe) at once, beside its
        stream; a recorded or scripted view has nothing to ask."""
        asked = []
        for state in self.app.host_states:
            sample_now = getattr(state.source, "sample_now", None)
            if sample_now is None:
                continue
            asked.append(state.key)
            self.app.run_worker(
                self._refresh(state, sample_now),
                name=f"refresh {state.key}",
                group=f"{REFRESH_GROUP}{state.index}",
                exclusive=True,  # a second press restarts the wait, never stacks probes
                exit_on_error=False,
            )
        if asked:
            self.app.notify(f"sampling {', '.join(asked)} now …", timeout=2)
        else:
            self.app.notify("these samples are recorded: there is nothing to ask", timeout=3)

    async def _refresh(self, state: HostState, sample_now: Callable[..., Any]) -> None:
        try:
            snap = await sample_now(state.snapshot)
        except (TransportError, OSError) as exc:
            title = self.app.host_title(state, "refresh")
            self.app.notify(f"no sample now: {exc}", title=title, severity="warning", timeout=6)
            return
        await self._fold(state, snap, refresh=True)

    async def stop(self) -> None:
        """Stop every probe before the loop closes (the runs themselves are never touched)."""
        for w in self.app.workers:
            if w.group.startswith((FEED_GROUP, REFRESH_GROUP)):
                w.cancel()
        for state in self.app.host_states:
            await state.close()

    def worker_changed(self, event: Worker.StateChanged) -> None:
        group = event.worker.group
        if not group.startswith(FEED_GROUP) or event.state != WorkerState.ERROR:
            return
        state = self.app.host_states[int(group[len(FEED_GROUP) :])]
        err = f"the sample reader stopped: {event.worker.error!r}; restarting"
        self.app.post_message(LinkDown(state.key, err, RESTART_AFTER))
        self.app.set_timer(RESTART_AFTER, lambda: self._start_feed(state))

    # -- the messages --

    def sample_ready(self, msg: SampleReady) -> None:
        state = self.app.state_of(msg.host)
        try:
            self._take_sample(state, msg)
        finally:
            state.drawn.set()  # also when nothing was drawn: the feed must not wait for ever

    def _take_sample(self, state: HostState, msg: SampleReady) -> None:
        several = len(self.app.host_states) > 1  # else there is no overview
        row = summarize(state) if several else None  # this host's row before this sample
        state.last = msg
        state.link_up()
        self.app.alerts.sample(state, msg)  # before drawing: an alert never waits on a panel
        pane = self.app.pane_of(state)
        if pane is None or not pane.show_sample(msg):
            return  # the pane is gone or the app is exiting: nothing to draw on, nothing to say
        # The overview draws every host: only when this sample changed this host's row (a
        # job's row shows its members' steps, which move with every sample).
        if several and (state.job is not None or summarize(state) != row):
            self.app.draw_safely("overview", self.app.refresh_overview)
        for ev in msg.events:
            if ev.kind in ("crash", "launch-failed"):
                title = self.app.host_title(state, "run crashed")
                self.app.notify(ev.text, title=title, severity="error", timeout=15)
        state.samples += 1
        self.app.samples += 1

    def link_down(self, msg: LinkDown) -> None:
        state = self.app.state_of(msg.host)
        state.link_down(msg.error, msg.retry_in)
        self.app.alerts.link_down(state, msg.error)
        self._show_link(state)
        self.app.refresh_overview()
        if self._countdown is not None:
            self._countdown.resume()

    def _show_link(self, state: HostState) -> None:
        pane = self.app.pane_of(state)
        if pane is not None:
            findings = state.last.diagnosis.findings if state.last else ()
            pane.show_link_down(state.link_text() or "", findings)

    def tick_links(self) -> None:
        down = [state for state in self.app.host_states if state.link == "down"]
        for state in down:
            self._show_link(state)
        if down:  # the overview draws every host: once a tick, not once per host down
            self.app.refresh_overview()
        elif self._countdown is not None:
            self._countdown.pause()

    def sample_malformed(self, msg: SampleMalformed) -> None:
        title = self.app.host_title(self.app.state_of(msg.host), "unreadable sample")
        self.app.notify(msg.error[:300], title=title, severity="warning", timeout=5)
