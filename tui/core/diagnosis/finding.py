"""The Finding record and the words findings share (pure, stdlib only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """``message`` says what is wrong, why it matters and what to do next, in words that hold
    for every front end (no key to press); ``action`` names the run-control action that does
    that next step (launch | kill | restart | kill_process), so a front end with keys can say
    which key does it."""

    code: str
    severity: str  # info | warning | error
    gpus: tuple[int, ...]
    message: str
    action: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "gpus": list(self.gpus),
            "message": self.message,
        }


def duration(seconds: float, coarse: bool = False) -> str:
    """``42s`` under 2 minutes, ``6m10s`` under 2 hours, then ``1h05m``; always rounded down.
    ``coarse``: tens of seconds (``40s``) under a minute, ``6m`` from the first minute on and
    hours from the first hour, for text that must not change every second (a GPU chip's held
    time: a panel whose readings stand redraws at most every 10 s in a label's first minute,
    then once a minute, where eight idle GPUs' chips counting seconds redrew the whole board
    every second)."""
    s = max(0, int(seconds))
    if coarse and s < 3600:
        return f"{s - s % 10}s" if s < 60 else f"{s // 60}m"
    if not coarse and s < 7200:
        return f"{s}s" if s < 120 else f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def gpus_text(ids: Sequence[int]) -> str:
    return ("GPU " if len(ids) == 1 else "GPUs ") + ", ".join(str(i) for i in ids)
