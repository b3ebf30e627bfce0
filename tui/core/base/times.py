"""Times as UTC text: the one way records, documents, alerts and the supervisor's lines say
a time (UTC, so a reader on another host sees the same words)."""

from __future__ import annotations

import datetime as dt


def _utc(t: float, fmt: str) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(fmt)


def utc_iso(t: float) -> str:
    """``2026-01-02T12:00:03Z``."""
    return _utc(t, "%Y-%m-%dT%H:%M:%SZ")


def utc_clock(t: float) -> str:
    """``12:00:03Z``: the time of day alone."""
    return _utc(t, "%H:%M:%SZ")
