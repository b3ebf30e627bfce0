"""The headless supervisor's files in the run root, and how a reader judges them (pure).

``<run_root>/supervisor.json`` is the record a running ``dflash-tui supervise`` rewrites
(atomically: tmp + rename) on every heartbeat; ``<run_root>/supervisor.policy.json`` is a
request a viewer writes (``A`` in the app) and the supervisor consumes;
``<run_root>/.supervisor.lock/`` makes one supervisor per run root; ``supervisor.log`` is a
detached supervisor's log. The probe reads the record on the GPU host (so the app and
``status`` see it through the feed they already have); ``SupervisorRecord`` is that reading,
tolerant of any shape: a wrong field reads as unknown, never as a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dflash_tui.core.base.fields import as_float, as_int, as_str

RECORD_FILE = "supervisor.json"
POLICY_FILE = "supervisor.policy.json"
LOG_FILE = "supervisor.log"
LOCK_DIR = ".supervisor.lock"
MIN_STALE_S = 10.0  # a heartbeat older than max(3 beats, this) is stale


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
    doc: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, d: Any) -> SupervisorRecord | None:
        if not isinstance(d, dict):
            return None
        policy = d.get("policy")
        enabled = policy.get("enabled") if isinstance(policy, dict) else None
        return cls(
            pid=as_int(d.get("pid")),
            host=as_str(d.get("host")),
            version=as_str(d.get("version")),
            started_at=as_float(d.get("started_at")),
            heartbeat_at=as_float(d.get("heartbeat_at")),
            heartbeat_s=as_float(d.get("heartbeat_s")) or 2.0,
            start_ticks=as_int(d.get("start_ticks")),
            mode=as_str(d.get("mode")) or "daemon",
            restarts=as_int(d.get("restarts")) or 0,
            auto=enabled if isinstance(enabled, bool) else None,
            stopped_at=as_float(d.get("stopped_at")),
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

    def to_status(self, now: float) -> dict[str, Any]:
        """The status JSON's ``supervisor`` value: the record, plus what a reader judged."""
        out = dict(self.doc)
        age = self.age(now)
        out["heartbeat_age_s"] = round(age, 1) if age is not None else None
        out["fresh"] = self.live(now)
        out["stale"] = self.stale(now)
        return out


def policy_request(d: Any) -> bool | None:
    """The ``enabled`` a viewer asked for in ``supervisor.policy.json`` (None: no valid ask)."""
    if isinstance(d, dict) and isinstance(d.get("enabled"), bool):
        return bool(d["enabled"])
    return None
