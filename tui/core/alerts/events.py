"""What is worth an alert (pure), one home for the headless supervisor and the app alike.

- ``RunWatch``: a run's end, once per run and only for a run seen alive: ``run-exited``,
  ``launch-failed`` or ``run-finished`` (an exit in the policy's success codes); a run stopped on
  request yields ``stopped`` (logged, never an alert code).
- ``FindingWatch``: a finding code (no-progress, loss-not-finite, near-oom, ...) that appeared,
  once while it holds; the run's end and the supervisor's own staleness are left to
  ``RunWatch`` and the supervisor.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from dflash_tui.core.base.rundir import ALIVE_STATES, ENDED_STATES, exit_text
from dflash_tui.core.base.snapshot import RunRecord

# Codes said from the run directory (RunWatch) or by the supervisor itself, not from findings.
CYCLE_CODES = frozenset({"run-exited", "launch-failed", "run-finished", "supervisor-stale"})
STOPPED = "stopped"  # a run stopped on request: said in the log, never sent


@dataclass(frozen=True)
class Said:
    """What to tell: an alert code (or ``stopped``), its severity and words."""

    code: str
    severity: str
    message: str
    run_id: str | None = None


class FindingLike(Protocol):
    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def message(self) -> str: ...


@dataclass
class RunWatch:
    seen_alive: str | None = None  # the last run seen alive (by this watcher or one before)
    end_alerted: str | None = None  # the last run whose end was said

    def observe(self, run: RunRecord | None, state: str, success: Collection[int]) -> Said | None:
        """The run's end, said once; None while it runs, or for a run never seen alive (it
        ended while nobody watched) or already said."""
        if run is None:
            return None
        if state in ALIVE_STATES:
            self.seen_alive = run.id
            return None
        if run.id != self.seen_alive or run.id == self.end_alerted or state not in ENDED_STATES:
            return None  # queued again, suspended, unknown: no end to say (yet)
        self.end_alerted = run.id
        if run.kill_requested_at is not None:
            return Said(STOPPED, "info", f"run {run.id} was stopped on request ({state})", run.id)
        code = run.exit_code
        if state == "launch-failed":
            why = run.launch_error or exit_text(code)
            return Said("launch-failed", "error", f"run {run.id} failed to start: {why}", run.id)
        if state == "exited" and code in success:
            return Said("run-finished", "info", f"run {run.id} finished (exit {code})", run.id)
        return Said("run-exited", "error", f"run {run.id} {state} ({exit_text(code)})", run.id)


@dataclass
class FindingWatch:
    holding: set[str] = field(default_factory=set)  # the codes that held at the last sample

    def observe(self, findings: Iterable[FindingLike]) -> list[Said]:
        """Findings (not info) whose code appeared since the last sample, once each."""
        found = [f for f in findings if f.severity != "info" and f.code not in CYCLE_CODES]
        now = {f.code for f in found}
        out, said = [], set()
        for f in found:
            if f.code not in self.holding and f.code not in said:
                said.add(f.code)
                out.append(Said(f.code, f.severity, f.message))
        self.holding = now
        return out
