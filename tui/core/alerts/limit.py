"""The rate limit (pure): one alert per code per interval; what is held back is summed up.

An alert whose code was sent less than ``interval(code)`` seconds ago is held (counted, the
latest kept). When the interval has passed, ``due`` sends the latest held alert saying how many
were held, so a restart loop yields one alert and then a summary, never one per crash. FATAL
closes the limiter: it carries every count still held, and nothing is sent after it until
``reopen`` (a new run, or auto-restart turned on again). The state is plain JSON
(``to_json``/``from_json``), kept in supervisor.json so a restarted supervisor honours it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.base.times import utc_iso

FINAL = "fatal"


class RateLimiter:
    def __init__(self, interval: Callable[[str], float]) -> None:
        self.interval = interval
        self.last_sent: dict[str, float] = {}
        self.held: dict[str, tuple[int, Alert]] = {}
        self.closed = False  # after FATAL

    def offer(self, alert: Alert, now: float) -> Alert | None:
        """The alert to send now (with what was held before it), or None: held or closed."""
        if self.closed:
            return None
        if alert.code == FINAL:
            held = tuple((code, n) for code, (n, _) in sorted(self.held.items()))
            self.held.clear()
            self.closed = True
            self.last_sent[FINAL] = now
            return replace(alert, held=held)
        last = self.last_sent.get(alert.code)
        if last is not None and now - last < self.interval(alert.code):
            n = self.held.get(alert.code, (0, alert))[0]
            self.held[alert.code] = (n + 1, alert)
            return None
        self.last_sent[alert.code] = now
        n = self.held.pop(alert.code, (0, alert))[0]
        return replace(alert, held=((alert.code, n),) if n else ())

    def due(self, now: float) -> list[Alert]:
        """Summaries of the codes whose interval has passed with alerts held back."""
        if self.closed:
            return []
        out = []
        for code, (n, latest) in sorted(self.held.items()):
            since = self.last_sent.get(code)
            if since is not None and now - since < self.interval(code):
                continue
            del self.held[code]
            self.last_sent[code] = now
            when = f" since {utc_iso(since)}" if since is not None else ""
            msg = f"{n} more {code} alert{'s' if n > 1 else ''}{when}; the latest: {latest.message}"
            out.append(replace(latest, message=msg, held=((code, n),), time=now))
        return out

    def reopen(self) -> None:
        """Alerts flow again (after FATAL: a new run was seen, or auto-restart turned on)."""
        self.closed = False

    def to_json(self) -> dict[str, Any]:
        return {
            "last_sent": dict(self.last_sent),
            "held": {c: {"count": n, "alert": a.to_json()} for c, (n, a) in self.held.items()},
            "closed": self.closed,
        }

    def restore(self, d: Any) -> None:
        """Take back ``to_json``'s state; anything malformed is dropped, not fatal."""
        if not isinstance(d, dict):
            return
        sent = d.get("last_sent")
        if isinstance(sent, dict):
            self.last_sent = {
                str(k): float(v)
                for k, v in sent.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            }
        held = d.get("held")
        if isinstance(held, dict):
            for code, entry in held.items():
                alert = Alert.from_json(entry.get("alert")) if isinstance(entry, dict) else None
                count = entry.get("count") if isinstance(entry, dict) else None
                if alert is not None and isinstance(count, int) and count > 0:
                    self.held[str(code)] = (count, alert)
        self.closed = d.get("closed") is True
