"""The feed side of the app: one exclusive worker per host (group ``feed:<index>``, so a host
whose link is down, or whose SSH connect hangs, never holds up another) takes that host's feed
events, keeps the host's state, hands each one to the host's pane (tui/app/host/pane.py: it
keeps it in its store, and draws it only while shown), and keeps the overview's row of that host
current. The refresh key (``R``) samples every host at once beside its stream; the sample goes
through the same fold as the stream's.

A sample is parsed and folded (tracker, timeline) on the event loop, where it is drawn: the
fold costs less than the parse, and a hand-over to a thread and back for each sample of each
host cost more than both at 64 hosts. The flight recorders write in one thread of their own
(tui/core/record/thread.py): a disk that stalls never holds up a sample, and what goes wrong
there is said on the host's timeline."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from textual.timer import Timer

from dflash_tui.app import heap
from dflash_tui.app.host.alerts import AppAlerts, timeline_logger
from dflash_tui.app.host.no_job import NoJob
from dflash_tui.app.host.pane import post_events
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.source import Disconnected, Malformed
from dflash_tui.app.host.state import HostState, summarize
from dflash_tui.app.ports import AppPort
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.link.transport import TransportError
from dflash_tui.core.record.thread import RecordThread

FEED_GROUP = "feed:"
REFRESH_GROUP = "refresh:"
RESTART_AFTER = 2.0  # seconds before a crashed sample reader is started again
# The overview summarises every host: redrawn for samples at most this often (seconds). With a
# run on each of 64 hosts every sample changes its row, and a redraw per sample would build
# 64 rows 64 times a second; the first change after a quiet spell is drawn at once.
OVERVIEW_EVERY = 0.25
CLOSE_S = 10.0  # seconds the exit waits for every host's record to be written and closed
STOP_S = 1.0  # then the record thread's end (its queue is empty unless its disk hangs)
EXIT_NOTES_MAX = 100  # lines the recorders may add to the quit note (a few a host)


async def wait_closed(closing: list[Future[None]], timeout: float) -> None:
    """Wait for every record's close, all within one ``timeout``: a disk that hangs holds the
    exit that long once, not once a host (the record thread is a daemon)."""
    if closing:
        await asyncio.wait([asyncio.wrap_future(f) for f in closing], timeout=timeout)


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
        self.records = RecordThread()  # every host's flight recorder writes there
        self.stopping = False
        self.exit_notes: list[str] = []  # what the recorders said while the app stopped
        self._countdown: Timer | None = None  # ticks while a host is down (its retry countdown)
        self._overview_at = 0.0  # monotonic time of the last overview drawn for a sample
        self._overview_due: Timer | None = None  # the one redraw waiting for OVERVIEW_EVERY

    def start(self) -> None:
        heap.tune_collector()  # the samples about to flow are most of what the app allocates
        cfg = self.app.cfg
        for state in self.app.host_states:
            if state.source is None:
                log = self._record_log(state)
                state.source = state.live_source(cfg.interval, cfg.record, self.records, log)
            self._start_feed(state)
        # The retry countdown of hosts that are down; paused while none is: no idle wake-ups.
        self._countdown = self.app.set_interval(1.0, self.tick_links, pause=True)

    def _start_feed(self, state: HostState) -> None:
        self.app.run_worker(
            self._feed(state),
            name=f"feed {state.key}",
            group=feed_group(state),
            exclusive=True,
            exit_on_error=False,
        )

    async def _feed(self, state: HostState) -> None:
        """The host's feed; one that fails (a bug) is said and started again."""
        try:
            await self._consume(state)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            err = f"the sample reader stopped: {exc!r}; restarting"
            self.link_down(state, err, RESTART_AFTER)
            self.app.set_timer(RESTART_AFTER, lambda: self._start_feed(state))

    def _record_log(self, state: HostState) -> logging.Logger:
        """The log of ``state``'s recorder: its warnings (a write that failed, samples left
        out; said in the record thread) become the host's timeline events, on the loop."""
        loop = asyncio.get_running_loop()

        def say(severity: str, text: str) -> None:
            if self.stopping:  # the screens are gone: said after the app, in the quit note
                if len(self.exit_notes) < EXIT_NOTES_MAX:
                    self.exit_notes.append(text)
                return
            ev = Event(time.time(), "record", severity, text)
            post = lambda: post_events(self.app.pane_of(state), state, [ev])  # noqa: E731
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                loop.call_soon_threadsafe(post)

        # What went wrong; not each segment's thinning.
        return timeline_logger(f"dflash_tui.app.record.{state.index}", say, logging.WARNING)

    async def _consume(self, state: HostState) -> None:
        """Every feed event is drawn on the host's pane as it comes."""
        assert state.source is not None
        async for ev in state.source.events():
            if isinstance(ev, Snapshot):
                self._fold(state, ev)
                # A stream's lines already read come without a wait: the keys get their
                # turn between two samples all the same.
                await asyncio.sleep(0)
            elif isinstance(ev, Disconnected):
                self.link_down(state, ev.error, ev.retry_in)
            elif isinstance(ev, Malformed):
                self.sample_malformed(state, ev.error)
            elif isinstance(ev, NoJob):
                self.no_job(state)

    def _fold(self, state: HostState, snap: Snapshot, refresh: bool = False) -> None:
        """Diagnose ``snap`` and have it drawn, before the next sample is taken (a flood
        never queues ahead of the user's keys); a refresh sample older than the last one
        drawn (the stream's came first) is dropped."""
        last = state.snapshot
        if refresh and last is not None and snap.time <= last.time:
            return
        try:
            msg = state.fold(snap)
        except Exception as exc:  # a bug in diagnosis must not end the feed
            self.sample_malformed(state, f"diagnosis failed: {exc!r}")
            return
        self.sample_ready(state, msg)

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
        self._fold(state, snap, refresh=True)

    async def stop(self) -> None:
        """Stop every probe before the loop closes (the runs themselves are never touched)."""
        self.stopping = True  # what the recorders say now goes to the quit note
        for w in self.app.workers:
            if w.group.startswith((FEED_GROUP, REFRESH_GROUP)):
                w.cancel()
        # Queued first, so the disk works while the links close.
        closing = [f for state in self.app.host_states if (f := state.close_record()) is not None]
        for state in self.app.host_states:
            await state.close()
        await wait_closed(closing, CLOSE_S)
        await asyncio.to_thread(self.records.stop, STOP_S)

    # -- what the feed brings --

    def sample_ready(self, state: HostState, msg: SampleReady) -> None:
        """A diagnosed sample: kept as the host's latest, alerted on, drawn on its pane."""
        several = len(self.app.host_states) > 1  # else there is no overview
        row = summarize(state) if several else None  # this host's row before this sample
        state.last = msg
        state.link_up()
        self.app.alerts.sample(state, msg)  # before drawing: an alert never waits on a panel
        pane = self.app.pane_of(state)
        if pane is None or not pane.show_sample(msg):
            return  # the pane is gone or the app is exiting: nothing to draw on, nothing to say
        # The overview draws every host: only when this sample changed this host's row (a
        # job's row shows its members' steps, which move with every sample). A link that
        # comes back is drawn at once, as its going down was.
        if several and row is not None and row.link != "connected":
            self._draw_overview()
        elif several and (state.job is not None or summarize(state) != row):
            self._overview_changed()
        for ev in msg.events:
            if ev.kind in ("crash", "launch-failed"):
                # A launch that never started did not crash: the title says which it was.
                what = "launch failed" if ev.kind == "launch-failed" else "run crashed"
                title = self.app.host_title(state, what)
                self.app.notify(ev.text, title=title, severity="error", timeout=15)
        state.samples += 1
        self.app.samples += 1

    def _overview_changed(self) -> None:
        """A sample changed a row: the overview is drawn now, or once when OVERVIEW_EVERY has
        passed since the last (one redraw for every change meanwhile: it reads every row)."""
        if self._overview_due is not None:
            return  # already coming, and it will read this sample's row
        wait = self._overview_at + OVERVIEW_EVERY - time.monotonic()
        if wait <= 0:
            self._draw_overview()
        else:
            self._overview_due = self.app.set_timer(wait, self._draw_overview)

    def _draw_overview(self) -> None:
        self._overview_due, self._overview_at = None, time.monotonic()
        self.app.draw_safely("overview", self.app.refresh_overview)

    def link_down(self, state: HostState, error: str, retry_in: float) -> None:
        """The probe stream broke; the feed retries in ``retry_in`` seconds."""
        state.link_down(error, retry_in)
        self.app.alerts.link_down(state, error)
        self._show_link(state)
        self.app.refresh_overview()
        if self._countdown is not None:
            self._countdown.resume()

    def no_job(self, state: HostState) -> None:
        """A node host whose job holds no node for it now: said once, not counted down (no
        probe runs there, so no link is up, down or coming)."""
        if state.link == "idle":
            return  # the source says so every interval while it waits
        state.link_idle()
        pane = self.app.pane_of(state)
        if pane is not None:
            pane.show_no_job()
        self.app.refresh_overview()

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

    def sample_malformed(self, state: HostState, error: str) -> None:
        """A probe line that could not be parsed (or a sample diagnosis failed on)."""
        title = self.app.host_title(state, "unreadable sample")
        self.app.notify(error[:300], title=title, severity="warning", timeout=5)
