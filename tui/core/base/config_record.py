"""The ``[record]`` table: the flight recorder's switch, size cap and segment length (pure).

```
[record]
enabled = true      # whoever supervises the host records (docs/record.md)
max_mib = 256       # per run: past it, older segments keep 1 sample in N
segment_s = 300     # a new segment file every this many seconds
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

RECORD_KEYS = ("enabled", "max_mib", "segment_s")


@dataclass(frozen=True)
class RecordSettings:
    enabled: bool = True
    max_mib: float = 256.0
    segment_s: float = 300.0

    @property
    def max_bytes(self) -> int:
        return int(self.max_mib * 1024 * 1024)


def record_from_table(table: Any) -> RecordSettings:
    """``[record]`` read and checked; raises ValueError naming the bad value."""
    if not isinstance(table, dict):
        raise ValueError("[record] must be a table")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"record.enabled must be true or false, not {enabled!r}")
    return RecordSettings(
        enabled,
        _positive(table, "max_mib", RecordSettings.max_mib, 1.0),
        _positive(table, "segment_s", RecordSettings.segment_s, 5.0),
    )


def _positive(table: dict[str, Any], key: str, default: float, least: float) -> float:
    v = table.get(key, default)
    # inf passes ">= least" and overflows the byte cap later: only a finite number is a size
    if isinstance(v, bool) or not isinstance(v, int | float) or not least <= v < math.inf:
        raise ValueError(f"record.{key} must be a number >= {least:g}, not {v!r}")
    return float(v)
