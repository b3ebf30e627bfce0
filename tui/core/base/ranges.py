"""What a GPU can report, per field, and what becomes of a value outside it: unknown (None),
flagged in the sample's errors (a driver's garbage reading is a finding, not a bar at 4 billion
percent); memory used beyond the total likewise."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

T = TypeVar("T")

MAX_MIB = 1 << 24  # 16 TiB: more memory than any GPU has
# What a GPU can report, per field: (lowest, highest). Outside: unknown, and flagged.
GPU_LIMITS: dict[str, tuple[float, float]] = {
    "util": (0, 100),
    "mem_util": (0, 100),
    "mem_used_mib": (0, MAX_MIB),
    "mem_total_mib": (0, MAX_MIB),
    "mem_reserved_mib": (0, MAX_MIB),
    "temp_c": (-40, 200),
    "power_w": (0, 10000),
    "power_limit_w": (0, 10000),
    "sm_clock_mhz": (0, 100000),
    "mem_clock_mhz": (0, 100000),
    "throttle_reasons": (0, 2**64 - 1),
    "ecc_uncorrected": (0, 2**63 - 1),
}
PROC_LIMITS: dict[str, tuple[float, float]] = {"used_mib": (0, MAX_MIB)}


def sane(row: T, limits: dict[str, tuple[float, float]], what: str, errors: list[str]) -> T:
    """``row`` with every value outside its limits made unknown (None), each one flagged in
    ``errors``; memory used beyond the total is flagged likewise."""
    bad: dict[str, None] = {}
    for name, (lo, hi) in limits.items():
        v = getattr(row, name)
        if v is not None and not lo <= v <= hi:
            bad[name] = None
            errors.append(
                f"{what}: {name} {_short(v)} is out of range ({lo}..{hi}): shown as unknown"
            )
    used, total = getattr(row, "mem_used_mib", None), getattr(row, "mem_total_mib", None)
    if "mem_used_mib" not in bad and "mem_total_mib" not in bad and used and total and used > total:
        bad["mem_used_mib"] = None
        errors.append(
            f"{what}: mem_used_mib {used} exceeds mem_total_mib {total}: shown as unknown"
        )
    return replace(row, **bad) if bad else row  # type: ignore[type-var]


def _short(v: float) -> str:
    text = f"{v:g}" if isinstance(v, float) else str(v)
    if len(text) <= 24:
        return text
    if isinstance(v, float):
        return f"{v:.3g}"
    return f"{text[:4]}... ({len(text.lstrip('-'))} digits)"  # no float holds it: no :g
