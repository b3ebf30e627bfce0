"""The line store behind a log tail (pure; no Textual): sanitised, bounded, filterable.

Lines arrive in bursts (a sample can carry thousands). Everything here is O(lines) with small
constants and never holds more than ``max_lines`` lines, whatever arrives.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

from dflash_tui.core.base.text import clean_line

MAX_LINES = 5000
# What the seed's operator grepped for: errors, exceptions, progress, compile/warm-up milestones.
DEFAULT_FILTER = (
    r"(?i)error|exception|traceback|fatal|killed|step|tok/s|tokens/s|compil|warm|loaded|exit"
    r'|^\s+File "'
)
ERROR_RE = re.compile(
    r"(?i)\b(error|exception|traceback|fatal|killed|out of memory|oom|segmentation fault)\b"
    r"|^\s*File \".*\", line \d+"
)


class LineStore:
    """All recent lines of one log (bounded) plus the filtered lines not yet drawn."""

    def __init__(self, max_lines: int = MAX_LINES) -> None:
        self.max_lines = max_lines
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.pending: deque[str] = deque(maxlen=max_lines)
        self.pattern: re.Pattern[str] | None = None
        self.received = 0  # lines seen since the tail started (including dropped ones)
        self.dropped = 0  # lines that arrived but were evicted before being drawn
        self.shown = 0  # lines that passed the filter since it was last set

    def add(self, raw: Iterable[str]) -> int:
        """Take new raw lines; returns how many passed the filter."""
        batch = raw if isinstance(raw, list | tuple) else list(raw)
        self.received += len(batch)
        if len(batch) > self.max_lines:  # older ones would be evicted at once: skip their work
            self.dropped += len(batch) - self.max_lines
            batch = batch[-self.max_lines :]
        clean = [clean_line(x) for x in batch]
        self.lines.extend(clean)
        before = len(self.pending)
        shown = clean if self.pattern is None else [x for x in clean if self.pattern.search(x)]
        self.shown += len(shown)
        overflow = before + len(shown) - self.max_lines
        if overflow > 0:
            self.dropped += overflow
        self.pending.extend(shown)
        return len(shown)

    def take_pending(self) -> list[str]:
        out = list(self.pending)
        self.pending.clear()
        return out

    def set_filter(self, pattern: re.Pattern[str] | None) -> list[str]:
        """Change the filter; returns every stored line that now shows (for a redraw)."""
        self.pattern = pattern
        self.pending.clear()
        kept = list(self.lines) if pattern is None else [x for x in self.lines if pattern.search(x)]
        self.shown = len(kept)
        return kept

    def clear(self) -> None:
        self.lines.clear()
        self.pending.clear()


def compile_filter(text: str) -> re.Pattern[str]:
    """Compile a user's filter; raises ValueError with a readable message."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"filter {text!r} is not a valid regular expression: {exc}") from None
