"""Rows of a probe snapshot as dicts, for the diagnosis unit tests (Snapshot.from_dict)."""

from __future__ import annotations

from typing import Any


def gpu_row(i: int, used: int | None = 0, util: int | None = 0, **kw: Any) -> dict[str, Any]:
    """An H200 with index ``i``, uuid ``GPU-i``, this much memory used and utilisation."""
    return {
        "index": i,
        "uuid": f"GPU-{i}",
        "name": "NVIDIA H200",
        "mem_used_mib": used,
        "util": util,
        "mem_total_mib": 143771,
        **kw,
    }
