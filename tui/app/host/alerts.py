"""The app's own ``[alerts]``: when no live headless supervisor holds a host's run root, the
app tells a person what it saw, with the core's alerts (tui/core/alerts/): the same events
(run-exited, launch-failed, run-finished from ``RunWatch``; restart and FATAL from the app's
auto-restart; host-unreachable from the link; finding codes from ``FindingWatch``), the same
filter (``on``), rate limit and notifiers (a command, a webhook). Beside a live supervisor
the app sends none of them: the supervisor does, so nobody is told twice.

Opt-in (``[alerts] terminal``), the app can also ring the terminal it runs in: the bell, or an
OSC 9 / OSC 777 desktop notification (tui/core/alerts/terminal.py builds it, terminal-safe).
That one is the viewer's own, so it rings beside a supervisor too, under its own rate limit.

A notifier that fails or hangs is logged on the host's timeline (``alert`` events) and stops
nothing: the core's ``Alerter`` sends in the background, a lane per notifier, each send under
a total deadline, a webhook on threads of its own (never the executor samples are diagnosed
on).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from dflash_tui.app.host.pane import post_events
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.state import HostState, shown_supervisor
from dflash_tui.app.ports import AppPort
from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.events import STOPPED, FindingWatch, RunWatch, Said
from dflash_tui.core.alerts.notify import Alerter
from dflash_tui.core.alerts.terminal import terminal_sequence
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.text import clean_line
from dflash_tui.core.control.policy import Decision
from dflash_tui.core.diagnosis.timeline import Event

DRAIN_S = 2.0  # on quit, how long queued alerts may still take to go out


class AlertsApp(AppPort, Protocol):
    def write_terminal(self, data: str) -> None:
        """Raw bytes to the terminal the app runs in (nothing when headless)."""
        ...


class TerminalNotifier:
    """A notifier (the core's protocol) that writes the bell / OSC 9 / OSC 777 sequence."""

    def __init__(self, kind: str, write: Callable[[str], None]) -> None:
        self.kind, self.write, self.name = kind, write, f"terminal ({kind})"

    async def send(self, alert: Alert) -> None:
        seq = terminal_sequence(self.kind, alert)
        if seq:
            self.write(seq)


def timeline_logger(name: str, say: Callable[[str, str], None], level: int) -> logging.Logger:
    """A log whose lines from ``level`` up are the host's timeline events
    (``say(severity, text)``, the text terminal-safe): the alerter's (sent, held back, failed),
    the flight recorder's (tui/app/host/feeds.py). Not registered with logging, whose registry
    would keep it, and through its handler the app, for the process's life."""
    log = logging.Logger(name)
    log.propagate, log.handlers = False, [_TimelineLog(say)]
    log.setLevel(level)
    return log


class _TimelineLog(logging.Handler):
    """A log's lines as the host's timeline events (``timeline_logger``)."""

    def __init__(self, say: Callable[[str, str], None]) -> None:
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        try:
            severity = "warning" if record.levelno >= logging.WARNING else "info"
            self.say(severity, clean_line(record.getMessage(), 500))
        except Exception:  # a log line must never break the app
            self.handleError(record)


class HostAlerts:
    """One host's watchers and its two alerters (the [alerts] notifiers; the terminal)."""

    def __init__(self, state: HostState, settings: AlertSettings, log: logging.Logger,
                 write: Callable[[str], None]) -> None:  # fmt: skip
        self.state = state
        self.lines: deque[str] = deque(maxlen=max(settings.log_lines, 1))
        self.remote = Alerter(settings, log, tail=self._tail) if settings.enabled else None
        self.local = None
        if settings.terminal != "off":
            ring = replace(settings, log_lines=0)
            self.local = Alerter(ring, log, notifiers=[TerminalNotifier(settings.terminal, write)])
        self.runs, self.findings = RunWatch(), FindingWatch()
        self.unreachable = False

    async def _tail(self, alert: Alert) -> tuple[str, ...]:
        return tuple(self.lines)

    def alerters(self) -> list[Alerter]:
        return [a for a in (self.remote, self.local) if a is not None]

    def say(self, said: Said) -> None:
        if said.code == STOPPED:
            return
        # A supervisor on the host that went away cannot say so (its last record only looks
        # live from here): the app tells of an unreachable host whoever supervises.
        supervised = shown_supervisor(self.state) is not None and said.code != "host-unreachable"
        alert = Alert(said.code, said.severity, said.message, self.state.key, time.time(),
                      said.run_id or self._run_id(), source="app")  # fmt: skip
        if self.remote is not None and not supervised:  # else the supervisor tells
            self.remote.offer(alert, alert.time)
        if self.local is not None:
            self.local.offer(alert, alert.time)

    def _run_id(self) -> str | None:
        diag = self.state.diagnosis
        return diag.run.id if diag is not None and diag.run is not None else None


class AppAlerts:
    """Every host's alerts; fed by the feeds (samples, the link) and the auto-restarts."""

    def __init__(self, app: AlertsApp, settings: AlertSettings) -> None:
        self.app, self.settings = app, settings
        self.hosts: dict[int, HostAlerts] = {}

    def _of(self, state: HostState) -> HostAlerts | None:
        if not (self.settings.enabled or self.settings.terminal != "off"):
            return None
        if state.index not in self.hosts:
            name = f"dflash_tui.app.host.alerts.{state.index}"
            log = timeline_logger(name, self._timeline(state), logging.INFO)
            self.hosts[state.index] = HostAlerts(state, self.settings, log, self.app.write_terminal)
        return self.hosts[state.index]

    def _timeline(self, state: HostState) -> Callable[[str, str], None]:
        def say(severity: str, text: str) -> None:
            ev = Event(time.time(), "alert", severity, text)
            post_events(self.app.pane_of(state), state, [ev])

        return say

    def sample(self, state: HostState, msg: SampleReady) -> None:
        h = self._of(state)
        if h is None:
            return
        for log in msg.snapshot.logs:
            if log.is_run_log:
                h.lines.extend(clean_line(x, 1000) for x in log.lines)
        h.unreachable = False  # the link is up: the next loss of it is said again
        diag = msg.diagnosis
        said = h.runs.observe(diag.run, diag.run_state, state.cfg.restart.success_codes)
        for s in ([said] if said is not None else []) + h.findings.observe(diag.findings):
            h.say(s)
        now = time.time()
        for a in h.alerters():
            a.tick(now)

    def link_down(self, state: HostState, error: str) -> None:
        h = self._of(state)
        if h is None or h.unreachable:
            return
        h.unreachable = True
        h.say(Said("host-unreachable", "error", f"{state.key} unreachable: {error}"))

    def decision(self, state: HostState, d: Decision) -> None:
        """The app's own auto-restart decided: a restart is due, or it gave up (FATAL)."""
        h = self._of(state)
        if h is None:
            return
        if d.action == "restart":
            h.say(Said("restart", "warning", d.message))
        elif d.action == "fatal":
            h.say(Said("fatal", "error", d.message))

    async def stop(self) -> None:
        """On quit: what is queued gets ``DRAIN_S`` to go out; hung notifiers are cut off."""
        for h in self.hosts.values():
            for a in h.alerters():
                await a.close(DRAIN_S)
