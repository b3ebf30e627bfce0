"""Opt-in auto-restart in the app: one worker per host (group ``autorestart:<index>``)
runs tui/core/control/restart.py's ``supervise`` through the host's bridge, so it shares the
host's one transport (one SSH connection). Its decisions go to the host's timeline, a restart
and FATAL also to a notification, and the header says ``auto-restart on`` or ``FATAL``.

Enabled per host by the config's ``[restart] auto`` or ``--auto-restart``; ``A`` toggles it for
the host shown. Never in read-only mode. A run stopped on request (``k``, ``r``) is recorded as
such in its run directory, and the policy leaves it stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from dflash_tui.app.control.quit import end_workers
from dflash_tui.app.control.supervised import defer_toggle
from dflash_tui.app.host.pane import post_events
from dflash_tui.app.host.state import HostState
from dflash_tui.app.ports import AppPort
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.diagnosis.timeline import Event

if TYPE_CHECKING:  # launching code loads with the first launch, not at the app's start
    from dflash_tui.core.control.launch import LaunchResult

AUTO_GROUP = "autorestart:"
WAIT_POLL_S = 0.1  # how often a supervisor turned on looks whether the one before it has ended


def auto_group(state: HostState) -> str:
    return f"{AUTO_GROUP}{state.index}"


class AutoRestarts:
    """Every host's supervisor worker; needs nothing of the app beyond ``AppPort``."""

    def __init__(
        self, app: AppPort, on_decision: Callable[[HostState, Decision], None] | None = None
    ) -> None:
        self.app = app
        self.on_decision = on_decision  # the app's [alerts] (restart, FATAL)

    def start(self) -> None:
        """At start: every host whose policy is enabled (never in read-only mode)."""
        if self.app.read_only:
            return
        for state in self.app.host_states:
            if state.cfg.restart.enabled and not self._job_refused(state):
                self._start_auto(state)

    def _job_refused(self, state: HostState) -> bool:
        """A job member is restarted with its whole job, by the job supervisor (the app's
        single-host auto-restart would relaunch one member alone): said, and refused."""
        if state.job is None:
            return False
        name = state.job[0].name
        self.app.notify(
            f"{state.key} is a member of job {name}: the app does not auto-restart a job; "
            f"run `dflash-tui supervise --host {name}`",
            severity="warning",
        )
        return True

    def _start_auto(self, state: HostState) -> None:
        supervise = getattr(state.bridge, "supervise", None)
        if self.app.read_only or supervise is None:  # a stand-in bridge (tests) may not have it
            return
        # A supervisor turned off ends at its next poll, or once the launch it began has ended
        # and been said: the new one waits for it (``_supervised``). Cutting it off (an
        # exclusive worker) would leave that launch unsaid, its run started with no word.
        before = [w for w in self.app.workers if w.group == auto_group(state) and w.is_running]
        state.auto_stop = stop = asyncio.Event()
        state.auto = "on"
        policy = replace(state.cfg.restart, enabled=True)  # `A` turns on a host left off
        self.app.run_worker(
            self._supervised(state, supervise, policy, stop, before),
            name=f"auto-restart {state.key}",
            group=auto_group(state),
            exit_on_error=False,
        )
        self._show_auto(state)

    def _stop_auto(self, state: HostState) -> None:
        if state.auto_stop is not None:
            state.auto_stop.set()  # supervise returns within 0.1 s (or after a launch it began)
        state.auto_stop, state.auto = None, "off"
        self._show_auto(state)

    def toggle(self) -> None:
        """``A``: auto-restart on or off for the host shown (a node of a Slurm job: its
        Slurm host, whose job is the run)."""
        state = self.app.current.owner
        if self.app.read_only:  # the binding is hidden too; this is the second lock
            self.app.notify("read-only mode: auto-restart is not available", severity="error")
            return
        if defer_toggle(self.app, state):  # a live `dflash-tui supervise`: A changes its policy
            return
        if state.auto == "on":
            self._stop_auto(state)
            self._auto_event(state, "info", "auto-restart off (A)")
            self.app.notify(f"auto-restart off on {state.key}", timeout=3)
            return
        if self._job_refused(state):
            return
        self._start_auto(state)
        p = state.cfg.restart
        self._auto_event(
            state,
            "info",
            f"auto-restart on (A): {p.retries} retries, backoff {p.backoff_s:g} s",
        )
        self.app.notify(f"auto-restart on for {state.key}", timeout=3)

    async def stop(self) -> None:
        """On quit: set every stop event and give the supervisors a moment to return, so none
        is cut off halfway through a launch; the run itself is never touched."""
        workers = [w for w in self.app.workers if w.group.startswith(AUTO_GROUP) and w.is_running]
        for state in self.app.host_states:
            if state.auto_stop is not None:
                state.auto_stop.set()
        await end_workers(workers)

    # -- what the supervisor reports (called on the app's loop: the worker is async) --

    def _auto_decision(self, state: HostState, d: Decision, stop: asyncio.Event) -> None:
        """``stop``: the deciding supervisor's; one turned off and on again since (``A``)
        still says what it did, but the host's state is its successor's."""
        if self.on_decision is not None:
            self.on_decision(state, d)
        if d.action == "restart":
            self._auto_event(state, "warning", f"auto-restart: {d.message}")
        elif d.action == "fatal":
            text = d.message + self._ended(state, stop, "fatal")
            self._told(state, "error", text, "auto-restart gave up", kind="FATAL", timeout=20)
        elif d.action in ("stopped", "done"):
            self._auto_event(state, "info", f"auto-restart: {d.message}")
        elif d.action == "watch" and d.message.startswith("cannot read"):
            self._auto_event(state, "warning", f"auto-restart: {d.message}")

    def _auto_launched(self, state: HostState, res: LaunchResult) -> None:
        if res.run_id is None:  # the supervisor counts it as a crash and says so next
            self._auto_event(state, "error", f"auto-restart: {res.message}")
        elif not res.started:
            # Refused beside a live run (left as it is), or the link went mid-launch and the
            # run read back cannot be told ours: said as it is, never as a launch.
            self._told(state, "warning", f"auto-restart: {res.message}", "auto-restart")
        elif res.ok:
            text = f"auto-restart: launched run {res.run_id}"
            self._told(state, "warning", text, "run restarted", kind="restarted")
        else:
            # Launched, and already gone by the end of its start window: said as such, not as
            # a restart that took; the supervisor judges that crash at its next look.
            text = f"auto-restart: launched run {res.run_id}, which did not last its start window"
            text += f": {res.error or res.state}"
            self._told(state, "error", text, "restarted run ended", kind="restarted")

    async def _supervised(
        self,
        state: HostState,
        supervise: Callable[..., Awaitable[Decision | None]],
        policy: RestartPolicy,
        stop: asyncio.Event,
        before: list[Worker[Any]],
    ) -> AutoRestart | None:
        """The host's supervisor, once the ones ``before`` it (turned off) have ended: it goes
        on from the last one's count and start, so a crash that came while it waited is judged
        (not taken for one from before auto-restart was on) and its restarts count towards
        FATAL; after a FATAL or a failure, afresh. Returns the policy's state for a successor:
        its own, or the one it took when turned off again while it waited; None after a FATAL
        or a failure. One that fails (a bug) stops, and says so."""
        for earlier in before:
            # Polled, not ``Worker.wait()``: a cancel of this worker would cancel that one too.
            while earlier.is_running:
                await asyncio.sleep(WAIT_POLL_S)
        # The last one waited for the ones before it, and took their state.
        last = before[-1] if before else None
        ended = last.result if last is not None and last.state == WorkerState.SUCCESS else None
        machine = ended if isinstance(ended, AutoRestart) else AutoRestart(policy)
        if stop.is_set():  # turned off again meanwhile
            return machine
        try:
            await supervise(
                policy,
                stop,
                lambda d: self._auto_decision(state, d, stop),
                lambda res: self._auto_launched(state, res),
                machine=machine,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            msg = f"auto-restart stopped: {exc!r}" + (
                self._ended(state, stop, "off") or "; A starts it again"
            )
            self._told(state, "error", msg, "auto-restart")
            return None
        # Gave up, even if said as "off" (a FATAL beside a live headless supervisor): afresh.
        return None if machine.fatal() is not None else machine

    def _ended(self, state: HostState, stop: asyncio.Event, auto: str) -> str:
        """The supervisor of ``stop`` ended (``auto``: "fatal" or "off"): the host's state
        says so when it was the host's, or none is on since; else it is its successor's, and
        this returns what the last word adds about that."""
        if state.auto_stop in (stop, None):
            state.auto, state.auto_stop = auto, None
            self._show_auto(state)
            return ""
        return "; the supervisor turned on since watches from now on"  # afresh, from now

    # -- drawing (the host's pane draws, or not once it is gone) --

    def _told(
        self,
        state: HostState,
        severity: SeverityLevel,
        text: str,
        what: str,
        kind: str = "",
        timeout: float | None = None,
    ) -> None:
        """``text`` on the host's timeline and as a notification titled with the host and
        ``what``."""
        self._auto_event(state, severity, text, kind)
        title = self.app.host_title(state, what)
        self.app.notify(text, title=title, severity=severity, timeout=timeout)

    def _auto_event(self, state: HostState, severity: str, text: str, kind: str = "") -> None:
        ev = Event(time.time(), kind or "auto-restart", severity, text)
        post_events(self.app.pane_of(state), state, [ev])

    def _show_auto(self, state: HostState) -> None:
        pane = self.app.pane_of(state)
        if pane is not None:
            pane.show_auto(state.auto)
        self.app.refresh_bindings()
