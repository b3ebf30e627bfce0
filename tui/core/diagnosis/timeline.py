"""The event timeline (pure; no Textual): launched, log appeared, compiled, first step, crash
with the exit code's meaning, restart, and a headless supervisor's restarts and FATAL (from its
record's history, so that restarts between two samples, or before the app started, are there
too). Folded from successive samples and diagnoses.

Milestones come from the pipeline's event stream when its JSON lines are visible in a watched
log (``{"event": "compiled", ...}``), else from the words in ordinary log lines.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from itertools import pairwise

from dflash_tui.core.base.rundir import ALIVE_STATES, exit_text
from dflash_tui.core.base.snapshot import RunRecord, Snapshot
from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.diagnosis.progress import parse_line
from dflash_tui.core.diagnosis.views import Diagnosis

MAX_EVENTS = 200


@dataclass(frozen=True)
class Event:
    time: float
    kind: str  # launched | attached | restarted | running | log | compiled | ... | crash
    # | suspended | resumed (a Slurm job held stopped, let go on)
    # | supervisor (a headless supervisor's restart or FATAL)
    severity: str  # info | warning | error
    text: str


_MILESTONES = (
    ("model_loaded", re.compile(r"(?i)\bmodel[_ ]loaded\b|\bloaded (the )?(target )?model\b")),
    ("compiled", re.compile(r"(?i)\bcompiled\b|\bcompil(e|ation) (done|finished|complete)")),
    ("warmed", re.compile(r"(?i)\bwarmed\b|\bwarm-?up (done|finished|complete)")),
)
_ERROR = re.compile(r"(?i)^Traceback \(most recent call last\)|^\w*(Error|Exception)\b.*:")


class Timeline:
    """Remembers the run's state between samples and emits an Event per change."""

    def __init__(self) -> None:
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self._run: RunRecord | None = None
        self._state: str | None = None
        self._logs: dict[str, bool] = {}
        self._seen: set[str] = set()  # milestones already reported for the current run
        self._supervised_to = 0.0  # the supervisor's history is on the timeline up to here

    def fold(self, snap: Snapshot, diag: Diagnosis) -> list[Event]:
        """The new events of this sample (also appended to ``events``)."""
        new: list[Event] = []
        self._run_events(diag, new)
        self._supervisor_events(diag.supervisor, new)
        self._log_events(snap, diag.time, new)
        self.add(new)
        return new

    def add(self, new: list[Event]) -> None:
        """Keep ``events`` in time order: a sample reports a crash at its end time, after
        events of other sources (auto-restart's decisions) that came later."""
        self.events.extend(new)
        if any(a.time > b.time for a, b in pairwise(self.events)):
            self.events = deque(sorted(self.events, key=lambda e: e.time), maxlen=MAX_EVENTS)

    def _run_events(self, diag: Diagnosis, new: list[Event]) -> None:
        run, state, t = diag.run, diag.run_state, diag.time
        prev, prev_state = self._run, self._state
        if run is not None and (prev is None or prev.id != run.id):
            at = run.started_at or t
            ids = ", ".join(f"{k} {v}" for k, v in (("PID", run.pid), ("PGID", run.pgid)) if v)
            who = f"run {run.id} ({ids})" if ids else f"run {run.id}"
            # Replacing a live run, or one stopped on request, is a restart; else a new launch.
            was_alive, prev_state = prev_state in ALIVE_STATES, None
            if prev is not None and (was_alive or prev.kill_requested_at is not None):
                new.append(Event(at, "restarted", "info", f"restarted: {who} replaces {prev.id}"))
            elif prev is not None:
                new.append(Event(at, "launched", "info", f"launched {who} (after {prev.id})"))
            elif self._state is None and state not in ("starting", "none"):
                new.append(Event(t, "attached", "info", f"attached to {who}, {state}"))
                prev_state = state  # the attach line says it already
            else:
                new.append(Event(at, "launched", "info", f"launched {who}"))
            self._seen = set()
        if run is not None and state != prev_state and state != "starting":
            ev = _held_event(state, prev_state, t) or self._state_event(run, state, t)
            if ev is not None:
                new.append(ev)
        self._run, self._state = run, state

    def _supervisor_events(self, sup: SupervisorRecord | None, new: list[Event]) -> None:
        if sup is None:
            return
        for e in sup.history:
            if e.time <= self._supervised_to:
                continue
            # Its own kind: the app's auto-restart says "restarted" and "FATAL" for itself.
            severity = "error" if e.kind == "fatal" else "warning"
            new.append(Event(e.time, "supervisor", severity, f"supervisor PID {sup.pid}: {e.text}"))
        self._supervised_to = max([self._supervised_to, *(e.time for e in sup.history)])

    def _state_event(self, run: RunRecord, state: str, t: float) -> Event | None:
        code = run.exit_code
        if state == "running":
            return Event(t, "running", "info", "running (alive past the start window)")
        if state == "launch-failed":
            why = (run.launch_error or exit_text(code)).strip()[-200:]
            return Event(t, "launch-failed", "error", f"launch failed: {why}")
        if state in ("exited", "killed"):
            at = run.ended_at or t
            # No exit code (the whole group vanished): the meaning says so, never "exit None".
            how = exit_text(code)
            if run.kill_requested_at is not None:
                return Event(at, "stopped", "info", f"stopped on request ({how})")
            if code == 0:
                return Event(at, "exited", "info", "finished (exit 0: success)")
            return Event(at, "crash", "error", f"crashed: {how}")
        return None

    def _log_events(self, snap: Snapshot, t: float, new: list[Event]) -> None:
        for log in snap.logs:
            was = self._logs.get(log.path)
            if was is not None and was != log.exists:
                what = "appeared" if log.exists else "disappeared"
                sev = "info" if log.exists else "warning"
                new.append(Event(t, "log", sev, f"log {what}: {log.path}"))
            elif was is None and not log.exists:
                new.append(Event(t, "log", "warning", f"log missing: {log.path}"))
            self._logs[log.path] = log.exists
            if self._run is not None and log.lines and (log.is_run_log or _is_events(log.path)):
                self._milestones(log.lines, t, new)

    def _milestones(self, lines: tuple[str, ...], t: float, new: list[Event]) -> None:
        seen = self._seen
        for line in lines[-2000:]:  # a flood cannot make this slow
            kind, text = _milestone(line, seen)
            if kind is None or kind in seen:
                continue
            seen.add(kind)
            sev = "error" if kind == "error" else "info"
            new.append(Event(t, kind, sev, text))


def _held_event(state: str, prev_state: str | None, t: float) -> Event | None:
    """A Slurm job held stopped (the ``suspended`` run state) and let go on again."""
    if state == "suspended":
        return Event(t, "suspended", "warning", "suspended by Slurm: its processes are stopped")
    if state == "running" and prev_state == "suspended":
        return Event(t, "resumed", "info", "resumed by Slurm: it goes on where it stopped")
    return None


def _is_events(path: str) -> bool:
    return path.endswith("events.jsonl")


def _may_name_milestone(head: str) -> bool:
    """Could one of ``_MILESTONES`` match? Each needs its word (``loaded``, ``compil``,
    ``warm``); for ASCII text a lower-case test says so (case folding maps no other letter to
    an ASCII one in these words but for the regexes' own Unicode rules: non-ASCII text asks
    them)."""
    if not head.isascii():
        return True
    low = head.lower()
    return "loaded" in low or "compil" in low or "warm" in low


def _milestone(line: str, seen: set[str] | frozenset[str] = frozenset()) -> tuple[str | None, str]:
    """The milestone a log line names, if any. ``seen``: milestones already reported; a
    line whose milestone would be one of them may be answered None without finding which
    (every line of every sample of a run's log comes here)."""
    head = line[:2000]
    if head.startswith("{"):
        try:
            doc = json.loads(head)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("event"), str):
            name = doc["event"]
            if name == "step":
                return "first_step", f"first step (step {doc.get('step', '?')})"
            return name, f"{name.replace('_', ' ')}"
    if _may_name_milestone(head):
        for kind, rx in _MILESTONES:
            if rx.search(head):
                return kind, kind.replace("_", " ")
    if "first_step" in seen and not _ERROR.search(head):
        return None, ""  # a step line or none: nothing new either way
    m = parse_line(head)
    if m is not None and m.step is not None:
        return "first_step", f"first step (step {m.step})"
    if _ERROR.search(head):
        return "error", f"error in log: {head[:160]}"
    return None, ""
