"""One alert and the shapes it travels in (pure): JSON for a command's stdin, environment
variables, and a webhook body that Slack incoming webhooks (``text``) and ntfy's JSON
publishing (``topic``, ``title``, ``message``, ``priority``, ``tags``) both accept."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dflash_tui.core.base.text import clean_line
from dflash_tui.core.base.times import utc_iso

PRIORITY = {"info": 3, "warning": 4, "error": 5}  # ntfy's 1-5
TAGS = {"info": "information_source", "warning": "warning", "error": "rotating_light"}


@dataclass(frozen=True)
class Alert:
    code: str  # an event (restart, fatal, run-exited, ...) or a finding code
    severity: str  # info | warning | error
    message: str
    host: str  # the supervised host's label
    time: float
    run_id: str | None = None
    log_tail: tuple[str, ...] = ()  # the run's last log lines
    held: tuple[tuple[str, int], ...] = ()  # alerts held back by the rate limit, by code
    source: str = "supervisor"

    @property
    def title(self) -> str:
        return f"dflash {self.code} on {self.host}" + (
            f" (run {self.run_id})" if self.run_id else ""
        )

    def held_text(self) -> str:
        if not self.held:
            return ""
        parts = [f"{n} {code}" for code, n in self.held]
        return "not sent (rate limit): " + ", ".join(parts)

    def text(self) -> str:
        """The human text: title, message, what was held back, the log tail in a code block."""
        out = [f"{self.title}: {self.message}"]
        if self.held:
            out.append(self.held_text())
        if self.log_tail:
            out.append("last log lines:\n```\n" + "\n".join(self.log_tail) + "\n```")
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "code": self.code,
            "severity": self.severity,
            "title": self.title,
            "message": self.message,
            "host": self.host,
            "run_id": self.run_id,
            "time": utc_iso(self.time),
            "epoch": self.time,
            "source": self.source,
            "held": {code: n for code, n in self.held},
            "log_tail": list(self.log_tail),
        }

    @classmethod
    def from_json(cls, d: Any) -> Alert | None:
        """The inverse of ``to_json`` (for the rate limiter's saved state); None if malformed."""
        try:
            return cls(
                code=str(d["code"]),
                severity=str(d["severity"]),
                message=str(d["message"]),
                host=str(d["host"]),
                time=float(d["epoch"]),
                run_id=d.get("run_id") if isinstance(d.get("run_id"), str) else None,
                log_tail=tuple(str(x) for x in d.get("log_tail", [])),
                held=tuple((str(k), int(v)) for k, v in dict(d.get("held", {})).items()),
                source=str(d.get("source", "supervisor")),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def webhook_body(self, topic: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "text": self.text(),  # Slack incoming webhooks
            "title": self.title,  # ntfy
            "message": self.text(),
            "priority": PRIORITY.get(self.severity, 3),
            "tags": [TAGS.get(self.severity, "warning"), "dflash"],
            "alert": self.to_json(),
        }
        if topic:
            body["topic"] = topic  # ntfy's JSON publishing, POSTed to the server's root URL
        return body

    def env(self) -> dict[str, str]:
        """``DFLASH_ALERT_*`` for a command hook: one line each, no control characters."""

        def one(v: str) -> str:
            return clean_line(v, 1000)

        return {
            "DFLASH_ALERT_CODE": one(self.code),
            "DFLASH_ALERT_SEVERITY": one(self.severity),
            "DFLASH_ALERT_HOST": one(self.host),
            "DFLASH_ALERT_RUN": one(self.run_id or ""),
            "DFLASH_ALERT_TITLE": one(self.title),
            "DFLASH_ALERT_MESSAGE": one(self.message),
            "DFLASH_ALERT_TIME": utc_iso(self.time),
        }

    def with_tail(self, lines: tuple[str, ...]) -> Alert:
        return replace(self, log_tail=tuple(clean_line(x, 1000) for x in lines))
