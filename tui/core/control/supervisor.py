"""The headless supervisor behind ``dflash-tui supervise``: the app's feed, diagnosis,
auto-restart policy and alerts, with no screen, one per run root.

Each cycle (every ``poll`` seconds) reads the run back (control.sh), lets the pure policy
(``AutoRestart``) decide, launches a due restart, alerts on what changed, and rewrites
``<run_root>/supervisor.json`` (its heartbeat) while it still holds the run root's lock. The
feed runs beside it and turns findings (no-progress, loss-not-finite, near-oom, ...) into
alerts. The job never depends on it: killing the supervisor leaves the run alone, and the next
supervisor re-attaches, keeping the restart count, carrying out a restart that was scheduled
(not judging that crash afresh), and leaving alone a run that ended while nobody supervised,
or one stopped on request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.events import STOPPED, FindingWatch, RunWatch
from dflash_tui.core.alerts.notify import Alerter
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import ALIVE_STATES, RunReport, exit_text
from dflash_tui.core.base.snapshot import RunRecord, Snapshot
from dflash_tui.core.base.supervision import Fatal, policy_request
from dflash_tui.core.base.timings import START_WINDOW_S, RestartPolicy
from dflash_tui.core.control import scheduled
from dflash_tui.core.control import supervisor_files as files
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.control.script import ControlError, fetch_run
from dflash_tui.core.control.supervisor_loop import LockLost, SupervisorLoop
from dflash_tui.core.control.supervisor_state import (
    Kept,
    decision_json,
    kept_from,
    policy_json,
    strip_tails,
)
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.local_feed import feed_for
from dflash_tui.core.link.transport import Transport, TransportError
from dflash_tui.core.record.recorder import Recorder


@dataclass(frozen=True)
class Options:
    poll: float = 2.0  # seconds between cycles (and heartbeats)
    interval: float = 2.0  # the feed's sampling interval
    start_window: float = START_WINDOW_S
    keep: int = 0
    mode: str = "daemon"  # daemon | once
    takeover_s: float = 60.0  # a lock held from another machine, silent this long, is taken
    log_path: str | None = None
    # The flight recorder's [record] (the command line passes the config's; off otherwise).
    record: RecordSettings = field(default_factory=lambda: RecordSettings(enabled=False))


class Supervisor(SupervisorLoop):
    def __init__(
        self,
        transport: Transport,
        host: HostConfig,
        policy: RestartPolicy,
        alerts: AlertSettings,
        log: logging.Logger,
        opts: Options = Options(),
    ) -> None:
        super().__init__(log, opts.poll, opts.takeover_s)
        self.transport, self.host, self.policy, self.opts = transport, host, policy, opts
        self.machine = AutoRestart(policy)
        self.alerter = Alerter(alerts, log, tail=self._tail)
        self.kept = Kept()
        self.restarts = 0
        self.last: Decision | None = None
        self.run_id: str | None = None
        self.run_state = "unknown"
        self.last_end: str | None = None  # how the run judged last ended, for a FATAL
        self.link_error: str | None = None
        self.findings: set[str] = set()
        self.finding_watch = FindingWatch()
        self.lines: deque[str] = deque(maxlen=max(alerts.log_lines, 1))
        self.recorder = Recorder(host, opts.record, "supervise", log)
        self.samples = 0  # feed samples seen (each one recorded while [record] is on)
        self.feed: asyncio.Task[None] | None = None

    # -- the lock and the record --

    async def acquire(self) -> None:
        """Take the run root's lock (a stale one is broken) and what the last record kept."""
        root = self.host.run_root
        rep = await self.lock_root(
            self.transport,
            self.host,
            "stop it with `dflash-tui supervise --stop` (same flags) first",
        )
        self.kept = kept_from(rep.record, self.opts.mode)
        k = self.kept
        self.restarts, self.findings = k.restarts, set(k.findings)
        self.history, self.gave_up = list(k.history), k.gave_up
        if k.fatal is not None and self.gave_up is None:  # a record with no account of it
            self.gave_up = Fatal(None, k.restarts, k.fatal[0], None)
        self.machine.resume(failures=k.failures, restart_times=k.restart_times, since=k.since,
                            pending=k.pending, fatal=k.fatal,
                            seen_alive=k.seen_alive if k.since is not None else None)  # fmt: skip
        self.alerter.limiter.restore(k.alerts)
        self.log.info(
            "supervising %s on %s (PID %d, auto-restart %s; kept: %d restarts, %d failures%s)",
            root, self.host.label, self.pid, "on" if self.policy.enabled else "off",
            k.restarts, k.failures,
            f", a restart of run {k.pending[0]} due" if k.pending else "",
        )  # fmt: skip

    def record(self, stopped: bool = False) -> dict[str, Any]:
        pending = self.machine.pending()
        fatal = self.machine.fatal()
        return {
            "schema": 1,
            **self.owner(),
            "heartbeat_at": time.time(),
            "heartbeat_s": self.opts.poll,
            "mode": self.opts.mode,
            "target": self.host.label,
            "container": self.host.container,
            "run_root": self.host.run_root,
            "log": self.opts.log_path,
            "policy": policy_json(self.policy),
            "restarts": self.restarts,
            "failures": self.machine.failures,
            "restart_times": self.machine.restarts[-20:],
            "last_decision": decision_json(self.last, self.machine.handled),
            "pending": {**(decision_json(pending[1]) or {}), "run_id": pending[0]}
            if pending
            else None,
            "fatal_run": self.machine.handled if fatal is not None else None,
            "launching": self.kept.launching,
            "run": {"id": self.run_id, "state": self.run_state},
            "seen_alive": self.kept.seen_alive,
            "end_alerted": self.kept.end_alerted,
            "findings": sorted(self.findings),
            "alerts": strip_tails(self.alerter.limiter.to_json()),
            "alerts_sent": self.alerter.sent,
            "alerts_failed": self.alerter.failed,
            "link": "down" if self.link_error else "up",
            "link_error": self.link_error,
            "stopped_at": time.time() if stopped else None,
            "stop_reason": self.stop_reason if stopped else None,
            **self.state_json(),
            "samples": self.samples,
            "recorded": self.recorder.samples,
        }

    async def beat(self) -> None:
        """Rewrite the record (the heartbeat); take a viewer's policy request."""
        try:
            rep = await self.beat_root(self.transport, self.host, self.record())
        except LockLost:
            raise
        except (ControlError, TransportError) as exc:
            self._link_down(f"heartbeat not written: {exc}")
            return
        enabled = policy_request(rep.policy)
        asked = (rep.policy or {}).get("requested_at")
        by = (rep.policy or {}).get("by", "?")
        if enabled is not None and isinstance(asked, int | float) and asked < self.started_at:
            # The flags this supervisor was started with are the later word.
            self.log.info("ignored a policy request by %s from before this supervisor", by)
        elif enabled is not None and enabled != self.policy.enabled:
            self.set_policy(replace(self.policy, enabled=enabled), f"asked by {by}")

    def set_policy(self, policy: RestartPolicy, why: str) -> None:
        """A new policy: a fresh decision machine (old crashes stay as they are), count kept."""
        self.policy = policy
        self.machine = AutoRestart(policy)
        self.gave_up = None
        self.alerter.limiter.reopen()
        self.log.info("auto-restart %s (%s)", "on" if policy.enabled else "off", why)

    async def release(self) -> None:
        with contextlib.suppress(ControlError, TransportError):
            await files.release(self.transport, self.host.run_root, self.token, self.record(True))

    # -- one decision cycle --

    async def cycle(self) -> Decision:
        rep: RunReport
        try:
            rep = await scheduled.latest_run(self.transport, self.host)
        except (ControlError, TransportError) as exc:
            self._link_down(f"cannot read the run: {exc}")
            decision = Decision("watch", f"cannot read the run: {exc}")
        else:
            self._link_up()
            decision = await self._decide(rep)
        if decision != self.last:
            self._decided(decision)
        self.last = decision
        self.alerter.tick(time.time())
        await self.beat()
        return decision

    async def _decide(self, rep: RunReport) -> Decision:
        now = rep.now if rep.now is not None else time.time()
        run, state = rep.record, rep.state(self.opts.start_window)
        self.run_id, self.run_state = (run.id if run else None), state
        if run is not None and state in ("exited", "killed", "launch-failed"):
            self.last_end = f"run {run.id} {state} ({run.launch_error or exit_text(run.exit_code)})"
        self._run_events(run, state, now)
        if self.machine.fatal() is not None and run is not None and run.id != self.machine.handled:
            self.set_policy(self.policy, f"a new run {run.id} after FATAL")
        k = self.kept
        if k.launching is not None:  # the last supervisor stopped while launching a restart
            if run is not None and run.id != k.launching:
                self.restarts += 1
                self.machine.restarted(now)
                self.log.info("the restart of run %s was launched: run %s", k.launching, run.id)
                self.event("restart", f"restarted run {k.launching} as run {run.id}", run.id)
            k.launching = None
        decision = self.machine.observe(run, state, now)
        if decision != self.last:  # said before it is carried out (a restart due at once too)
            self._decided(decision)
            self.last = decision
        if decision.action != "restart" or decision.at is None or now < decision.at:
            return decision
        assert run is not None
        k.launching = run.id
        await self.beat()  # the intent is on record before the launch
        res = await scheduled.relaunch_run(
            self.transport, self.host, start_window=self.opts.start_window, keep=self.opts.keep
        )
        k.launching = None
        if res.refused:  # a run is alive after all (another launch won): nothing to restart
            self.log.info("no restart of run %s: %s", run.id, res.message)
            return Decision("watch", res.message, failures=self.machine.failures)
        if res.run_id is None:
            self.log.warning("restart of run %s failed: %s", run.id, res.message)
            self.last_end = f"restart of run {run.id} failed ({res.error or res.message})"
            self.event("restart-failed", self.last_end, run.id)
            return self.machine.launch_failed(now, res.error or res.message)
        self.machine.restarted(now)
        self.restarts += 1
        self.log.info("restarted run %s as run %s (%s)", run.id, res.run_id, res.message)
        self.event("restart", f"restarted run {run.id} as run {res.run_id}", res.run_id)
        self.run_id, self.run_state = res.run_id, res.state
        if res.state in ALIVE_STATES:
            k.seen_alive = res.run_id
        return Decision("watch", f"restarted as run {res.run_id}", failures=self.machine.failures)

    def _decided(self, d: Decision) -> None:
        self.log.info("decision: %s: %s", d.action, d.message)
        if d.action == "restart":
            self.alert("restart", "warning", d.message)
        elif d.action == "fatal":
            if self.gave_up is None:  # each crash after the first followed a restart (or a try)
                self.give_up(max(d.failures - 1, 0), self.machine.handled, self.last_end)
            self.alert("fatal", "error", d.message)

    def _run_events(self, run: RunRecord | None, state: str, now: float) -> None:
        """run-exited, launch-failed, run-finished: once per run, for a run seen alive (by
        this supervisor or the one before it), never for one stopped on request."""
        k = self.kept
        watch = RunWatch(k.seen_alive, k.end_alerted)
        said = watch.observe(run, state, self.policy.success_codes)
        k.seen_alive, k.end_alerted = watch.seen_alive, watch.end_alerted
        if said is None:
            return
        if said.code == STOPPED:
            self.log.info("%s", said.message)
            return
        self.alert(said.code, said.severity, said.message, said.run_id)

    # -- alerts, the link, the feed --

    def alert(self, code: str, severity: str, message: str, run_id: str | None = None) -> None:
        run_id = run_id or self.run_id
        a = Alert(code, severity, message, self.host.label, time.time(), run_id)
        self.alerter.offer(a, a.time)

    async def _tail(self, alert: Alert) -> tuple[str, ...]:
        n = self.alerter.settings.log_lines
        if alert.run_id is not None:
            with contextlib.suppress(ControlError, TransportError):
                rep = await fetch_run(self.transport, self.host.run_root, alert.run_id, n)
                return rep.log_tail[-n:]
        return tuple(self.lines)[-n:]

    def _link_down(self, error: str) -> None:
        if self.link_error is None:
            self.log.warning("link to %s down: %s", self.host.label, error)
            self.alert("host-unreachable", "error", f"{self.host.label} unreachable: {error}")
        self.link_error = error

    def _link_up(self) -> None:
        if self.link_error is not None:
            self.log.info("link to %s back", self.host.label)
        self.link_error = None

    def on_sample(self, tracker: Tracker, snap: Snapshot) -> None:
        """Alert on findings that appeared (each code once while it holds)."""
        for log in snap.logs:
            if log.is_run_log:
                self.lines.extend(log.lines)
        diag = tracker.add(snap)
        self.samples += 1
        self.recorder.add(snap, diag)
        self.finding_watch.holding = self.findings
        found = scheduled.trusted(self.host, diag.findings)
        for said in self.finding_watch.observe(found):
            self.alert(said.code, said.severity, said.message)
        self.findings = self.finding_watch.holding

    async def watch_feed(self) -> None:
        tracker = Tracker(self.host.topology, thresholds_for(self.host))
        async for ev in feed_for(self.transport, self.host, self.opts.interval).events():
            if isinstance(ev, Snapshot):
                try:
                    self.on_sample(tracker, ev)
                except Exception as exc:  # a bug in diagnosis must not end supervision
                    self.log.warning("diagnosis failed: %r", exc)

    # -- the whole run --

    async def closing(self) -> None:
        if self.feed is not None:
            self.feed.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.feed
        await self.alerter.close(self.alerter.settings.timeout_s + 2)
        self.recorder.close()
        self.recorder.release()

    async def run(self, stop: asyncio.Event, ready: Callable[[], None] | None = None) -> None:
        """The loop (supervisor_loop.SupervisorLoop.run) with the feed beside it."""
        self.feed = asyncio.create_task(self.watch_feed())
        await super().run(stop, ready)

    async def once(self) -> Decision:
        """One cycle (``--once``): a sample's findings, a decision, its alerts, the record."""
        try:
            snap = await sample_once(self.transport, self.host)
            self.on_sample(Tracker(self.host.topology, thresholds_for(self.host), live=False), snap)
        except TransportError as exc:
            self._link_down(f"cannot sample: {exc}")
        try:
            decision = await self.cycle()
        finally:
            await self.closing()
            self.stop_reason = "once"
            await self.release()
        return decision
