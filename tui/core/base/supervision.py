"""The headless supervisor's files in the run root, and how a reader judges them (pure).

``<run_root>/supervisor.json`` is the record a running ``dflash-tui supervise`` rewrites
(atomically: tmp + rename) on every heartbeat; ``<run_root>/supervisor.policy.json`` is a
request a viewer writes (``A`` in the app) and the supervisor consumes;
``<run_root>/.supervisor.lock/`` makes one supervisor per run root; ``supervisor.log`` is a
detached supervisor's log. The probe reads the record on the GPU host (so the app and
``status`` see it through the feed they already have); ``SupervisorRecord`` is that reading,
tolerant of any shape: a wrong field reads as unknown, never as a crash.

The record is the one account of a supervisor's state that the app's header, ``status`` and
the timeline all read: ``fatal`` (when it gave up, after how many restarts, the last exit),
``history`` (each restart and the FATAL, with their times), ``policy`` (the auto-restart in
force) and ``write_error`` (it runs, but cannot write its files). ``summary`` words it once
for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dflash_tui.core.base.fields import as_float, as_int, as_str
from dflash_tui.core.base.text import clean_line
from dflash_tui.core.base.times import utc_clock

RECORD_FILE = "supervisor.json"
POLICY_FILE = "supervisor.policy.json"
LOG_FILE = "supervisor.log"
LOCK_DIR = ".supervisor.lock"
MIN_STALE_S = 10.0  # a heartbeat older than max(3 beats, this) is stale
HISTORY_MAX = 20  # restarts and FATALs a record keeps
TEXT_MAX = 300  # characters of a record's text kept (the record is the run root's: untrusted)


def clock(t: float | None) -> str:
    """``12:00:03Z`` (UTC) for a time in the record, ``?`` when unknown."""
    if t is None:
        return "?"
    return utc_clock(t)


def _text(v: Any) -> str | None:
    return clean_line(v, TEXT_MAX) if isinstance(v, str) else None


@dataclass(frozen=True)
class SupervisorEvent:
    """One restart (``restart``), a restart that launched nothing (``restart-failed``) or the
    end of trying (``fatal``), as the supervisor recorded it."""

    time: float
    kind: str
    text: str
    run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "kind": self.kind, "text": self.text, "run_id": self.run_id}

    @classmethod
    def from_dict(cls, d: Any) -> SupervisorEvent | None:
        if not isinstance(d, dict):
            return None
        t, kind, text = as_float(d.get("time")), _text(d.get("kind")), _text(d.get("text"))
        if t is None or not kind or text is None:
            return None
        return cls(t, kind[:40], text, _text(d.get("run_id")))


@dataclass(frozen=True)
class Fatal:
    """The supervisor gave up: when, after how many restarts, on which run, and how it ended."""

    at: float | None
    restarts: int
    run_id: str | None = None
    last_exit: str | None = None  # ``run X exited (exit 1: ...)``

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "restarts": self.restarts, "run_id": self.run_id,
                "last_exit": self.last_exit}  # fmt: skip

    def text(self, last_exit: bool = True) -> str:
        """``gave up after 3 restarts at 12:00:03Z (run X exited (exit 1: ...))``."""
        n = self.restarts
        last = f" ({self.last_exit})" if self.last_exit and last_exit else ""
        return f"gave up after {n} restart{'' if n == 1 else 's'} at {clock(self.at)}{last}"

    @classmethod
    def from_any(cls, d: Any, restarts: int) -> Fatal | None:
        if d is True:  # a bare flag: it gave up, nothing more is known
            return cls(None, restarts)
        if not isinstance(d, dict):
            return None
        n = as_int(d.get("restarts"))
        return cls(as_float(d.get("at")), n if n is not None else restarts,
                   _text(d.get("run_id")), _text(d.get("last_exit")))  # fmt: skip


@dataclass(frozen=True)
class SupervisorRecord:
    """What ``supervisor.json`` says; ``doc`` keeps the whole document for status and restore."""

    pid: int | None = None
    host: str | None = None  # where the supervisor process runs (not the GPU host)
    version: str | None = None
    started_at: float | None = None
    heartbeat_at: float | None = None
    heartbeat_s: float = 2.0  # seconds between heartbeats
    start_ticks: int | None = None  # the supervisor's own start time, for --stop
    mode: str = "daemon"  # daemon | once (a cron chain of --once runs)
    restarts: int = 0
    auto: bool | None = None  # the policy's `enabled`
    stopped_at: float | None = None  # set when it ended cleanly
    fatal: Fatal | None = None  # it gave up (and waits for a new run)
    history: tuple[SupervisorEvent, ...] = ()  # its restarts and FATALs, oldest first
    retries: int | None = None  # the policy in force
    write_error: str | None = None  # it runs but cannot write its files (a full disk)
    doc: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, d: Any) -> SupervisorRecord | None:
        if not isinstance(d, dict):
            return None
        policy = d.get("policy")
        policy = policy if isinstance(policy, dict) else {}
        enabled = policy.get("enabled")
        restarts = as_int(d.get("restarts")) or 0
        history = d.get("history")
        events = [SupervisorEvent.from_dict(e) for e in history[-HISTORY_MAX:]] if isinstance(
            history, list) else []  # fmt: skip
        return cls(
            pid=as_int(d.get("pid")),
            host=as_str(d.get("host")),
            version=as_str(d.get("version")),
            started_at=as_float(d.get("started_at")),
            heartbeat_at=as_float(d.get("heartbeat_at")),
            heartbeat_s=as_float(d.get("heartbeat_s")) or 2.0,
            start_ticks=as_int(d.get("start_ticks")),
            mode=as_str(d.get("mode")) or "daemon",
            restarts=restarts,
            auto=enabled if isinstance(enabled, bool) else None,
            stopped_at=as_float(d.get("stopped_at")),
            fatal=Fatal.from_any(d.get("fatal"), restarts),
            history=tuple(e for e in events if e is not None),
            retries=as_int(policy.get("retries")),
            write_error=_text(d.get("write_error")),
            doc=d,
        )

    def stale_after(self) -> float:
        return max(3 * self.heartbeat_s, MIN_STALE_S)

    def age(self, now: float) -> float | None:
        """Seconds since the last heartbeat (None: never beat)."""
        return None if self.heartbeat_at is None else max(now - self.heartbeat_at, 0.0)

    def live(self, now: float) -> bool:
        """A supervisor that is running now: not stopped, a daemon, its heartbeat fresh."""
        age = self.age(now)
        return (
            self.stopped_at is None
            and self.mode == "daemon"
            and age is not None
            and age <= self.stale_after()
        )

    def stale(self, now: float) -> bool:
        """It should be beating (a daemon that never said it stopped) and is not."""
        return self.stopped_at is None and self.mode == "daemon" and not self.live(now)

    def policy_text(self) -> str:
        """``auto-restart on (3 retries)`` / ``auto-restart off`` / ``auto-restart ?``."""
        if self.auto is None:
            return "auto-restart ?"
        if not self.auto:
            return "auto-restart off"
        return "auto-restart on" + (
            f" ({self.retries} retries)" if self.retries is not None else ""
        )

    def summary(self) -> str:
        """What it is doing, for every reader: ``FATAL: gave up after 3 restarts at ...`` or
        ``2 restarts, auto-restart on (3 retries)``; a write error is said after either."""
        if self.fatal is not None:
            out = f"FATAL: {self.fatal.text()}"
        else:
            n = self.restarts
            out = f"{n} restart{'' if n == 1 else 's'}, {self.policy_text()}"
        if self.write_error:
            out += f"; cannot write its files: {self.write_error}"
        return out

    def to_status(self, now: float) -> dict[str, Any]:
        """The status JSON's ``supervisor`` value: the record, plus what a reader judged."""
        out = dict(self.doc)
        age = self.age(now)
        out["heartbeat_age_s"] = round(age, 1) if age is not None else None
        out["fresh"] = self.live(now)
        out["stale"] = self.stale(now)
        out["state"] = (
            "stopped" if self.stopped_at is not None
            else "fatal" if self.fatal is not None
            else "supervising"
        )  # fmt: skip
        out["summary"] = self.summary()
        return out


def policy_request(d: Any) -> bool | None:
    """The ``enabled`` a viewer asked for in ``supervisor.policy.json`` (None: no valid ask)."""
    if isinstance(d, dict) and isinstance(d.get("enabled"), bool):
        return bool(d["enabled"])
    return None
