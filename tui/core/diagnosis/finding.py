"""The Finding record and the words findings share (pure, stdlib only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str  # info | warning | error
    gpus: tuple[int, ...]
    message: str

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "gpus": list(self.gpus),
            "message": self.message,
        }


def duration(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def gpus_text(ids: Sequence[int]) -> str:
    return ("GPU " if len(ids) == 1 else "GPUs ") + ", ".join(str(i) for i in ids)
