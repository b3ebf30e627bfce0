"""The one order of a GPU's processes wherever they are listed: the GPU panel's first row,
the tables, every finding's PIDs. Most GPU memory first (the job that matters, not an idle
context holder), then most CPU, then PID (stable)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class Weighed(Protocol):
    @property
    def pid(self) -> int: ...
    @property
    def used_mib(self) -> int | None: ...
    @property
    def cpu_pct(self) -> float | None: ...


P = TypeVar("P", bound=Weighed)


def weight(p: Weighed) -> tuple[int, float, int]:
    """The sort key: heavier sorts first."""
    return (-(p.used_mib or 0), -(p.cpu_pct or 0.0), p.pid)


def heaviest_first(procs: Iterable[P]) -> tuple[P, ...]:
    return tuple(sorted(procs, key=weight))
