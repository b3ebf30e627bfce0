"""How one value of a probe's JSON becomes a typed field: tolerantly. A value of the wrong
type, NaN, an infinity or an integer too large for a float is unknown (None, or left out of a
tuple), never an exception: a malformed probe line is a finding, not a crash. Shared by the
snapshot (snapshot.py) and the host around the GPUs (machine.py)."""

from __future__ import annotations

from typing import Any


def finite(v: float) -> bool:
    return v == v and abs(v) != float("inf")  # not NaN, not infinite


def as_int(v: Any) -> int | None:
    if type(v) is int:  # most values: the checks below in one
        return v
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and finite(v):
        return int(v)
    return None


def as_float(v: Any) -> float | None:
    if type(v) is float:  # most values; finite: NaN - NaN and inf - inf are NaN
        return v if v - v == 0.0 else None
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        try:
            return float(v)
        except OverflowError:  # an int too large for a float
            return None
    if isinstance(v, float) and finite(v):
        return v
    return None


def as_number(v: Any) -> float | None:
    """A number as a float, NaN and infinities kept (a loss that went NaN is news); an int too
    large for a float is unknown."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return float(v)
    except OverflowError:
        return None


def as_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_table(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in as_list(v) if isinstance(x, dict)]


def as_ints(v: Any) -> tuple[int, ...]:
    return tuple(x for x in (as_int(i) for i in as_list(v)) if x is not None)


def as_strs(v: Any) -> tuple[str, ...]:
    return tuple(x for x in as_list(v) if isinstance(x, str))
