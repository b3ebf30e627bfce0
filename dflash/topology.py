"""Which GPUs run the frozen target and which train the drafter.

Shared by the pipeline (where to put workers) and the supervisor (what each GPU should do).
Spec strings: ``0-4:5-7`` or ``0,1,2:3`` (target:drafter); each side a list of indices and ranges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class TopologyError(ValueError):
    """A topology that cannot be used, with a message fit for a user."""


def parse_indices(text: str, what: str = "GPU list") -> tuple[int, ...]:
    """Parse ``0-4``, ``0,1,2`` or ``0-2,5``; an empty string is an empty list."""
    text = text.strip()
    if not text:
        return ()
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if sep and lo.strip() == "":
            raise TopologyError(f"{what}: negative GPU index {part!r}")
        try:
            start = int(lo)
            end = int(hi) if sep else start
        except ValueError:
            raise TopologyError(f"{what}: {part!r} is not a GPU index or range like 0-4") from None
        if start < 0 or end < 0:
            raise TopologyError(f"{what}: negative GPU index {part!r}")
        if end < start:
            raise TopologyError(f"{what}: range {part!r} runs backwards")
        out.extend(range(start, end + 1))
    if len(set(out)) != len(out):
        raise TopologyError(f"{what}: GPU listed twice in {text!r}")
    return tuple(out)


def _check_index(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TopologyError(f"{what}: {v!r} is not a GPU index")
    if v < 0:
        raise TopologyError(f"{what}: negative GPU index {v}")
    return v


@dataclass(frozen=True)
class Topology:
    target: tuple[int, ...] = (0, 1, 2, 3, 4)
    drafter: tuple[int, ...] = (5, 6, 7)
    allow_shared: bool = False  # the pipeline may put several roles on one GPU

    def __post_init__(self) -> None:
        overlap = sorted(set(self.target) & set(self.drafter))
        if overlap and not self.allow_shared:
            raise TopologyError(f"GPU {overlap} cannot be both target and drafter")

    @classmethod
    def parse(cls, spec: str, allow_shared: bool = False) -> Topology:
        if ":" not in spec:
            raise TopologyError(
                f"topology {spec!r} needs target and drafter GPUs separated by ':', e.g. 0-4:5-7"
            )
        t, _, d = spec.partition(":")
        return cls(parse_indices(t, "target GPUs"), parse_indices(d, "drafter GPUs"), allow_shared)

    @classmethod
    def from_lists(cls, target: Iterable[object], drafter: Iterable[object]) -> Topology:
        tt = tuple(_check_index(v, "target GPUs") for v in target)
        dd = tuple(_check_index(v, "drafter GPUs") for v in drafter)
        for name, vals in (("target GPUs", tt), ("drafter GPUs", dd)):
            if len(set(vals)) != len(vals):
                raise TopologyError(f"{name}: GPU listed twice")
        return cls(tt, dd)

    def role(self, index: int) -> str:
        if index in self.target:
            return "target"
        if index in self.drafter:
            return "drafter"
        return "unassigned"

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.target) | set(self.drafter)))

    def spec(self) -> str:
        return f"{format_indices(self.target)}:{format_indices(self.drafter)}"

    def to_json(self) -> dict[str, list[int]]:
        return {"target": list(self.target), "drafter": list(self.drafter)}


def format_indices(vals: Sequence[int]) -> str:
    """(0, 1, 2, 3, 5) -> '0-3,5' (the inverse of parse_indices)."""
    parts: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        parts.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(parts)
