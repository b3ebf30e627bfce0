"""The ``[alerts]`` table: who is told what, and how often (pure, validated once here).

```
[alerts]
command = "mail -s dflash me@example.org"   # run with the alert as JSON on stdin
webhook = "https://hooks.slack.com/..."     # POST of JSON (Slack, ntfy's root URL + topic)
topic = "my-dflash-run"                     # ntfy's topic, sent in the JSON (optional)
on = ["run-exited", "restart", "fatal"]     # finding codes and events (default: the events)
min_interval_s = 300                        # per code; or a table {default = 300, restart = 60}
log_lines = 20                              # the run's last log lines, attached
timeout_s = 10                              # a notifier taking longer is cut off and logged
terminal = "off"                            # the app: "bell", "osc9", "osc777" (opt-in)
```

Unknown keys, unknown codes and wrong types are errors, as in every other table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dflash_tui.core.base.codes import FINDING_CODES

EVENTS = (
    "run-exited",
    "launch-failed",
    "no-progress",
    "loss-not-finite",
    "near-oom",
    "host-unreachable",
    "restart",
    "fatal",
    "run-finished",
)
KNOWN_CODES = frozenset(EVENTS) | frozenset(FINDING_CODES)
ALERT_KEYS = (
    "command", "webhook", "topic", "on", "min_interval_s", "log_lines", "timeout_s", "terminal",
)  # fmt: skip
# How the app tells the terminal it runs in (never by default): the BEL byte, or a desktop
# notification through OSC 9 (e.g. iTerm2, WezTerm, kitty) or OSC 777 (e.g. urxvt's
# notify extension, foot).
TERMINAL_KINDS = ("off", "bell", "osc9", "osc777")


class AlertConfigError(ValueError):
    """A bad ``[alerts]`` value (config.py turns it into its ConfigError)."""


@dataclass(frozen=True)
class AlertSettings:
    command: str | None = None
    webhook: str | None = None
    topic: str | None = None
    on: tuple[str, ...] = EVENTS
    min_interval_s: float = 300.0  # per code, unless `intervals` names the code
    intervals: tuple[tuple[str, float], ...] = ()
    log_lines: int = 20
    timeout_s: float = 10.0
    terminal: str = "off"  # TERMINAL_KINDS: the app's own terminal notification

    @property
    def enabled(self) -> bool:
        return bool(self.command or self.webhook)

    def interval(self, code: str) -> float:
        return dict(self.intervals).get(code, self.min_interval_s)


def _seconds(v: Any, where: str, most: float = 7 * 86400.0) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v or not 0 <= v <= most:
        raise AlertConfigError(f"{where} must be a number of seconds between 0 and {most:g}")
    return float(v)


def _line(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise AlertConfigError(f"{where} must be a non-empty string")
    if any(c in v for c in "\n\r\0"):
        raise AlertConfigError(f"{where}: a newline or NUL is not allowed")
    return v


def _intervals(v: Any) -> tuple[float, tuple[tuple[str, float], ...]]:
    if not isinstance(v, dict):
        return _seconds(v, "alerts.min_interval_s"), ()
    default = _seconds(v.get("default", 300.0), "alerts.min_interval_s.default")
    per = []
    for code, secs in sorted(v.items()):
        if code == "default":
            continue
        if code not in KNOWN_CODES:
            raise AlertConfigError(f"alerts.min_interval_s: unknown code {code!r}")
        per.append((code, _seconds(secs, f"alerts.min_interval_s.{code}")))
    return default, tuple(per)


def alerts_from_table(table: Any) -> AlertSettings:
    if not isinstance(table, dict):
        raise AlertConfigError("alerts must be a table")
    unknown = sorted(set(table) - set(ALERT_KEYS))
    if unknown:
        raise AlertConfigError(
            f"alerts: unknown key {unknown[0]!r} (known: {', '.join(ALERT_KEYS)})"
        )
    webhook = table.get("webhook")
    if webhook is not None:
        webhook = _line(webhook, "alerts.webhook")
        if not webhook.startswith(("http://", "https://")):
            raise AlertConfigError("alerts.webhook must be an http:// or https:// URL")
    on = table.get("on", list(EVENTS))
    if not isinstance(on, list) or not all(isinstance(c, str) for c in on):
        raise AlertConfigError("alerts.on must be a list of finding codes and events")
    bad = [c for c in on if c not in KNOWN_CODES]
    if bad:
        raise AlertConfigError(
            f"alerts.on: unknown code {bad[0]!r} (events: {', '.join(EVENTS)}; or a finding code)"
        )
    lines = table.get("log_lines", 20)
    if isinstance(lines, bool) or not isinstance(lines, int) or not 0 <= lines <= 1000:
        raise AlertConfigError("alerts.log_lines must be a whole number between 0 and 1000")
    default, per = _intervals(table.get("min_interval_s", 300.0))
    timeout = _seconds(table.get("timeout_s", 10.0), "alerts.timeout_s", 600.0)
    if timeout <= 0:
        raise AlertConfigError("alerts.timeout_s must be above 0")
    terminal = table.get("terminal", "off")
    if terminal not in TERMINAL_KINDS:
        raise AlertConfigError(f"alerts.terminal must be one of: {', '.join(TERMINAL_KINDS)}")
    return AlertSettings(
        terminal=terminal,
        command=_line(table["command"], "alerts.command") if "command" in table else None,
        webhook=webhook,
        topic=_line(table["topic"], "alerts.topic") if "topic" in table else None,
        on=tuple(dict.fromkeys(on)),
        min_interval_s=default,
        intervals=per,
        log_lines=lines,
        timeout_s=timeout,
    )
