"""Auto-restart decisions: from what the run directory says, whether and when to restart a
crashed run, like supervisord (pure: tested without processes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dflash_tui.core.base.rundir import ENDED_STATES, exit_text
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.base.timings import RestartPolicy


@dataclass(frozen=True)
class Decision:
    # off | watch (alive or nothing yet) | restart (at `at`) | done (success) | stopped (asked)
    # | fatal (gave up)
    action: str
    message: str
    at: float | None = None  # when to restart, on the run's clock
    failures: int = 0


class AutoRestart:
    """Decides, from what the run directory says, whether and when to restart a crashed run."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.failures = 0
        self.restarts: list[float] = []
        self._handled: str | None = None
        self._pending: Decision | None = None
        self._fatal: Decision | None = None
        self.since: float | None = None  # first observation, on the run's clock
        self._seen_alive: str | None = None  # the last run this machine saw alive

    def observe(self, run: RunRecord | None, state: str, now: float) -> Decision:
        p = self.policy
        if not p.enabled:
            return Decision("off", "auto-restart is off")
        if self.since is None:
            self.since = now
        if self._fatal is not None:
            return self._fatal
        if run is not None and state in ("starting", "running"):
            self._seen_alive = run.id
        # Queued, suspended (a Slurm job held stopped), unknown: not ended, so nothing to judge.
        if run is None or state not in ENDED_STATES:
            if run is not None and run.id == self._handled:
                # Judged ended, yet alive now (a transient reading): judge its real end afresh.
                self._handled, self._pending = None, None
            started = run.started_at if run is not None else None
            if state == "running" and started is not None and now - started >= p.stable_s:
                self.failures = 0
            return Decision("watch", f"run {state}", failures=self.failures)
        if run.id == self._handled and self._pending is not None:
            return self._pending
        self._handled = run.id
        self._pending = self._judge(run, state, now)
        return self._pending

    def _judge(self, run: RunRecord, state: str, now: float) -> Decision:
        p = self.policy
        if self._before_us(run):
            # Turning auto-restart on (or opening the app) must not relaunch an old crash.
            return Decision("watch", f"run {run.id} ended before auto-restart was on: left as is")
        if run.kill_requested_at is not None:
            return Decision("stopped", f"run {run.id} was stopped on request: not restarted")
        if state == "exited" and run.exit_code in p.success_codes:
            return Decision("done", f"run {run.id} exited {run.exit_code}: success")
        why = run.launch_error or exit_text(run.exit_code)
        return self._crash(f"run {run.id} {state} ({why})", run.started_at, run.ended_at, now)

    def _before_us(self, run: RunRecord) -> bool:
        since = self.since
        if since is None or run.started_at is None or run.started_at >= since:
            return False
        if run.id == self._seen_alive:  # it ended while watched (a kill leaves no end time)
            return False
        return run.ended_at is None or run.ended_at < since

    def _crash(self, what: str, started: float | None, ended: float | None, now: float) -> Decision:
        p = self.policy
        if started is not None and ended is not None and ended - started >= p.stable_s:
            self.failures = 0
        self.failures += 1
        recent = [t for t in self.restarts if now - t < p.flap_window_s]
        if self.failures > p.retries:
            self._fatal = Decision(
                "fatal", f"FATAL: {what}; gave up after {p.retries} restarts", None, self.failures
            )
            return self._fatal
        if len(recent) >= p.flap_max:
            self._fatal = Decision(
                "fatal",
                f"FATAL: {what}; flapping: {len(recent)} restarts in {p.flap_window_s:g} s",
                None,
                self.failures,
            )
            return self._fatal
        wait = p.backoff(self.failures)
        at = (ended if ended is not None else now) + wait
        msg = f"{what}; restart {self.failures}/{p.retries} in {wait:g} s"
        return Decision("restart", msg, at, self.failures)

    def restarted(self, now: float) -> None:
        """A launch was made for the pending restart; the next run is judged afresh."""
        self.restarts.append(now)
        self._pending = Decision("watch", "restarted", failures=self.failures)

    def launch_failed(self, now: float, error: str) -> Decision:
        """The restart's launch produced no run (refused, unreachable): count it as a crash."""
        self.restarts.append(now)
        self._pending = self._crash(f"restart failed ({error})", None, None, now)
        return self._pending

    # -- what a headless supervisor keeps across its own restarts (supervisor.json) --

    def pending(self) -> tuple[str, Decision] | None:
        """The restart scheduled for the run judged last, if one is (to be saved)."""
        if self._handled is None or self._pending is None or self._pending.action != "restart":
            return None
        return self._handled, self._pending

    def fatal(self) -> Decision | None:
        return self._fatal

    def resume(
        self,
        *,
        failures: int,
        restart_times: Sequence[float] = (),
        since: float | None = None,
        pending: tuple[str, Decision] | None = None,
        fatal: tuple[str, Decision] | None = None,
        seen_alive: str | None = None,
    ) -> None:
        """Continue where an earlier supervisor of the same run root stopped: its crash count,
        its recent restarts (the flapping guard), a restart it had scheduled for run
        ``pending[0]`` (carried out when due, not judged afresh: that crash was seen while
        supervised), or its FATAL for a run. ``since``: when supervision began (a chain of
        ``--once`` runs, with the run the last one saw alive); otherwise the first
        observation, so older crashes are left as is."""
        self.failures = max(failures, 0)
        self._seen_alive = seen_alive or self._seen_alive
        self.restarts = list(restart_times)
        if since is not None:
            self.since = since
        if pending is not None:
            self._handled, self._pending = pending
        if fatal is not None:
            self._handled, self._fatal = fatal[0], fatal[1]

    @property
    def handled(self) -> str | None:
        """The run judged last (the one a pending restart or FATAL is about)."""
        return self._handled
