"""Text bars and sparklines (pure; no Textual): cheap enough to redraw every sample.

Both take whatever a log line said: nan and ±inf never raise. A bar of nan is unknown; in a
sparkline nan is a gap, +inf and -inf sit at the top and bottom of the finite points' scale,
and a series with no finite point draws an empty line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_TICKS = "▁▂▃▄▅▆▇█"
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float | None, width: int) -> str:
    """A horizontal bar of ``width`` cells; unknown values (None, nan) show as a dotted track."""
    if width <= 0:
        return ""
    if fraction is None or math.isnan(fraction):
        return "·" * width
    cells = max(0.0, min(1.0, fraction)) * width
    full = int(cells)
    part = int((cells - full) * 8)
    out = "█" * full
    if full < width:
        out += _EIGHTHS[part] if part else "░"
        out += "░" * (width - full - 1)
    return out


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def sparkline(
    values: Sequence[float | None], width: int, lo: float | None = 0.0, hi: float | None = None
) -> str:
    """The last ``width`` values as block ticks; gaps (None, nan) as spaces, padded on the left.

    The scale is ``lo``..``hi``, either one taken from the finite values when None (or not
    finite itself); +inf and -inf are clamped to its ends.
    """
    if width <= 0:
        return ""
    vals = list(values)[-width:]
    known = [f for v in vals if (f := _finite(v)) is not None]
    if not known:
        return " " * width
    low, high = _finite(lo), _finite(hi)
    low = min(known) if low is None else low
    high = max(known) if high is None else high
    # Halves: the span of two finite floats (1e308 - -1e308) would overflow to inf.
    span = high / 2 - low / 2
    out = []
    for v in vals:
        if v is None or math.isnan(v):
            out.append(" ")
        elif span <= 0:
            out.append(_TICKS[0] if v <= low else _TICKS[-1])
        else:
            frac = (min(max(v, low), high) / 2 - low / 2) / span
            out.append(_TICKS[int(min(max(frac, 0.0), 1.0) * (len(_TICKS) - 1) + 0.5)])
    return " " * (width - len(out)) + "".join(out)
