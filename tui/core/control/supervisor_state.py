"""What the headless supervisor is and keeps: its identity (PID, host, start time), whether a
lock's owner is still alive, and the state it writes to and takes back from supervisor.json.

A supervisor's identity is checked by PID and start time (``/proc/PID/stat`` field 22) on its
own machine, never by name: a PID the kernel reused is not the supervisor.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

from dflash_tui.core.base.local_proc import alive
from dflash_tui.core.base.supervision import Fatal, SupervisorEvent, SupervisorRecord
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import Decision
from dflash_tui.core.diagnosis.document import iso_time


def hostname() -> str:
    return socket.gethostname()


def alive_here(host: Any, pid: Any, start_ticks: Any, here: str | None = None) -> bool | None:
    """Whether a process recorded on ``host`` is alive by PID and start time, when ``host`` is
    this machine (``here``, else its host name); None for another machine's, not to be judged
    from here."""
    if host != (hostname() if here is None else here):
        return None
    return alive(pid, start_ticks)


def describe_owner(owner: dict[str, Any] | None, record: dict[str, Any] | None) -> str:
    """``PID 123 on host since 2026-12-02T09:00:00Z (heartbeat 2s ago)`` for a refusal."""
    o = owner or record or {}
    rec = SupervisorRecord.from_dict(record) if record else None
    started = o.get("started_at")
    since = iso_time(started) if isinstance(started, int | float) else "?"
    beat = ""
    if rec is not None and rec.pid == o.get("pid") and (age := rec.age(time.time())) is not None:
        beat = f" (heartbeat {age:.0f}s ago)"
    return f"PID {o.get('pid', '?')} on {o.get('host', '?')} since {since}{beat}"


def stale_reason(
    owner: dict[str, Any] | None, record: dict[str, Any] | None, here: str, takeover_s: float
) -> str | None:
    """Why a lock's owner is gone (None: alive, or not to be judged gone from ``here``): on
    this machine by PID and start time; from another, by a heartbeat silent ``takeover_s``."""
    if not owner:  # made and never named (its maker died at once); take checks it stays so
        return "the lock names no owner"
    o = owner
    rec = SupervisorRecord.from_dict(record)
    if rec is not None and rec.stopped_at is not None and rec.pid == o.get("pid"):
        return f"its owner PID {rec.pid} stopped at {rec.stopped_at:.0f} but left the lock"
    live = alive_here(o.get("host"), o.get("pid"), o.get("start_ticks"), here)
    if live is not None:
        return None if live else f"its owner PID {o.get('pid')} on this machine is gone"
    age = rec.age(time.time()) if rec is not None else None
    if age is not None and age > takeover_s:
        return f"its owner on {o.get('host', '?')} has been silent for {age:.0f}s"
    return None


def policy_json(p: RestartPolicy) -> dict[str, Any]:
    return {
        "enabled": p.enabled,
        "retries": p.retries,
        "backoff_s": p.backoff_s,
        "max_backoff_s": p.max_backoff_s,
        "stable_s": p.stable_s,
        "success_codes": sorted(p.success_codes),
    }


def decision_json(d: Decision | None, run_id: str | None = None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "action": d.action,
        "message": d.message,
        "at": d.at,
        "failures": d.failures,
        "run_id": run_id,
        "time": time.time(),
    }


def decision_of(d: Any) -> Decision | None:
    if not isinstance(d, dict) or not isinstance(d.get("action"), str):
        return None
    at, failures = d.get("at"), d.get("failures")
    return Decision(
        d["action"],
        str(d.get("message", "")),
        float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None,
        failures if isinstance(failures, int) and not isinstance(failures, bool) else 0,
    )


@dataclass
class Kept:
    """What a supervisor takes over from the record of the one before it on this run root."""

    restarts: int = 0
    failures: int = 0
    restart_times: list[float] = field(default_factory=list)
    pending: tuple[str, Decision] | None = None  # a restart scheduled for this run
    fatal: tuple[str, Decision] | None = None
    launching: str | None = None  # it was launching a restart of this run when it stopped
    seen_alive: str | None = None  # the latest run it saw alive
    end_alerted: str | None = None  # the latest run whose end was alerted
    findings: list[str] = field(default_factory=list)
    alerts: dict[str, Any] = field(default_factory=dict)
    since: float | None = None  # a --once chain: supervision began at the last one's heartbeat
    history: list[SupervisorEvent] = field(default_factory=list)
    gave_up: Fatal | None = None  # the FATAL's account, with ``fatal``


def _run_id(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def kept_from(record: dict[str, Any] | None, mode: str) -> Kept:
    """Read what to keep from an earlier record; anything malformed is dropped, not fatal."""
    rec = SupervisorRecord.from_dict(record)
    if rec is None:
        return Kept()
    d = rec.doc
    k = Kept(restarts=rec.restarts)
    failures = d.get("failures")
    k.failures = failures if isinstance(failures, int) and not isinstance(failures, bool) else 0
    times = d.get("restart_times")
    if isinstance(times, list):
        k.restart_times = [float(t) for t in times if isinstance(t, int | float)][-50:]
    pending = d.get("pending")
    if isinstance(pending, dict) and _run_id(pending.get("run_id")):
        decision = decision_of(pending)
        if decision is not None and decision.action == "restart":
            k.pending = (pending["run_id"], decision)
    last = d.get("last_decision")
    fatal_run = _run_id(d.get("fatal_run"))
    if fatal_run and (decision := decision_of(last)) is not None and decision.action == "fatal":
        k.fatal = (fatal_run, decision)
        k.gave_up = rec.fatal
    k.history = list(rec.history)
    k.launching = _run_id(d.get("launching"))
    k.seen_alive = _run_id(d.get("seen_alive"))
    k.end_alerted = _run_id(d.get("end_alerted"))
    if isinstance(d.get("findings"), list):
        k.findings = [c for c in d["findings"] if isinstance(c, str)]
    if isinstance(d.get("alerts"), dict):
        k.alerts = d["alerts"]
    if mode == "once" and rec.mode == "once" and rec.heartbeat_at is not None:
        k.since = rec.heartbeat_at
    return k


def strip_tails(alerts: dict[str, Any]) -> dict[str, Any]:
    """The rate limiter's state without log tails (the record stays small)."""
    held = alerts.get("held")
    if isinstance(held, dict):
        for entry in held.values():
            if isinstance(entry, dict) and isinstance(entry.get("alert"), dict):
                entry["alert"]["log_tail"] = []
    return alerts
