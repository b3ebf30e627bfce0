"""Text bars and sparklines (pure; no Textual): cheap enough to redraw every sample."""

from __future__ import annotations

from collections.abc import Sequence

_TICKS = "▁▂▃▄▅▆▇█"
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float | None, width: int) -> str:
    """A horizontal bar of ``width`` cells; unknown values show as a dotted track."""
    if fraction is None:
        return "·" * width
    cells = max(0.0, min(1.0, fraction)) * width
    full = int(cells)
    part = int((cells - full) * 8)
    out = "█" * full
    if full < width:
        out += _EIGHTHS[part] if part else "░"
        out += "░" * (width - full - 1)
    return out


def sparkline(
    values: Sequence[float | None], width: int, lo: float | None = 0.0, hi: float | None = None
) -> str:
    """The last ``width`` values as block ticks; gaps (None) as spaces, padded on the left."""
    vals = list(values)[-width:]
    known = [v for v in vals if v is not None]
    if not known:
        return " " * width
    low = min(known) if lo is None else lo
    high = max(known) if hi is None else hi
    span = high - low
    out = []
    for v in vals:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(_TICKS[0] if v <= low else _TICKS[-1])
        else:
            i = int((min(max(v, low), high) - low) / span * (len(_TICKS) - 1) + 0.5)
            out.append(_TICKS[i])
    return " " * (width - len(out)) + "".join(out)
