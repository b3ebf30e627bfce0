"""How the GPU grid fits the space it has (pure; no Textual): full panels or one line per GPU,
how many columns, how wide each, how many rows show before it scrolls.

Full panels while the first eight fit: their columns are the largest count that divides the
GPUs evenly (8 GPUs: 8 or 4 across, never 6 + 2), or an even split when only a poor divisor
fits (7 GPUs: 4 + 3); every column has the same width, so no panel loses a column and no
sparkline wraps. When eight panels do not fit (80x24), one line per GPU (compact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PANEL_W = 29  # the narrowest panel whose meter line (26 cells inside) does not wrap
PANEL_H = 7  # border 2 + util, mem, chips, two process lines
HEADER_H = 2  # the run header above the grid
LOWER_MIN = 12  # rows kept for the metrics, logs, findings and tabs below the grid
FIRST = 8  # the GPUs that must fit as panels (one node); more scroll


@dataclass(frozen=True)
class GridFit:
    compact: bool
    columns: int  # 1 when compact
    column_width: int  # cells per column (the whole width when compact)
    visible_rows: int  # rows of panels (or lines) shown before the grid scrolls

    @property
    def height(self) -> int:
        return self.visible_rows * (1 if self.compact else PANEL_H)


def columns_for(count: int, fit: int) -> int:
    """Columns for ``count`` panels when ``fit`` fit side by side: one row if all fit; else the
    largest divisor of ``count`` that fits, unless it wastes half the width (a prime count),
    then an even split (rows as few as fit allows, columns as even as they can be)."""
    fit = max(1, fit)
    if count <= fit:
        return max(1, count)
    best = max(c for c in range(1, fit + 1) if count % c == 0)
    if best * 2 > fit:
        return best
    rows = math.ceil(count / fit)
    return math.ceil(count / rows)


def fit_grid(
    count: int, width: int, height: int, compact: bool | None = None, scrollbar: int = 1
) -> GridFit:
    """The grid's shape for ``count`` GPUs in ``width`` columns, in a pane of ``height`` rows
    (header, grid and the lower area share it). ``compact``: the user's choice (the key),
    None: automatic. When the grid scrolls, its ``scrollbar`` takes columns from the panels:
    the shape is chosen again without them, so every column still has the same width."""
    fit = _fit(count, width, height, compact)
    if scrolls(fit, count) and scrollbar:
        fit = _fit(count, width - scrollbar, height, compact)
    return fit


def scrolls(fit: GridFit, count: int) -> bool:
    """Whether ``count`` GPUs need more rows than ``fit`` shows."""
    return math.ceil(max(1, count) / fit.columns) > fit.visible_rows


def _fit(count: int, width: int, height: int, compact: bool | None) -> GridFit:
    budget = max(1, height - HEADER_H - LOWER_MIN)
    first = max(1, min(count, FIRST))
    columns = columns_for(first, width // PANEL_W)
    rows_first = math.ceil(first / columns)
    auto_compact = rows_first * PANEL_H > budget
    if compact if compact is not None else auto_compact:
        lines = max(1, count)
        return GridFit(True, 1, max(1, width), max(1, min(lines, max(3, budget))))
    rows_all = math.ceil(max(1, count) / columns)
    # Panels chosen by the key on a low terminal: two rows still (80x24: GPUs 0-3).
    visible = max(1, min(rows_all, rows_first, max(2, budget // PANEL_H)))
    return GridFit(False, columns, max(PANEL_W, width // columns), visible)
