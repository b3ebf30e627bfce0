"""Search in a log tail (``s``, then ``n``/``N``), apart from the filter: the filter chooses
which lines are shown, the search finds lines among those shown, highlights every match and
counts them (``3/17``). Pure: the lines are the Log widget's, already sanitised."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import chop_cells


def compile_search(text: str) -> re.Pattern[str]:
    """Case-insensitive regex; a bad one raises ValueError with the reason."""
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"bad search regex {text!r}: {exc}") from None


@dataclass
class SearchState:
    """One tail's search: the pattern, the lines that match, and which one is current."""

    pattern: re.Pattern[str] | None = None
    matches: list[int] = field(default_factory=list)  # line indices, ascending
    at: int = -1  # index into matches; -1 before the first n

    def update(self, lines: Sequence[str]) -> None:
        """Find the matches again (new lines, a filter change); the current one is kept by
        its line where it is still there."""
        line = self.matches[self.at] if 0 <= self.at < len(self.matches) else None
        pat = self.pattern
        self.matches = [i for i, x in enumerate(lines) if pat.search(x)] if pat else []
        self.at = self.matches.index(line) if line in self.matches else -1

    def step(self, forward: bool, from_line: int) -> int | None:
        """The next (or previous) match; before the first step, the first match at or after
        ``from_line`` (the top of the view) going forward, before it going back."""
        if not self.matches:
            return None
        n = len(self.matches)
        if self.at < 0:
            after = [k for k, i in enumerate(self.matches) if i >= from_line]
            if forward:
                self.at = after[0] if after else 0
            else:
                self.at = (after[0] - 1) % n if after else n - 1
        else:
            self.at = (self.at + (1 if forward else -1)) % n
        return self.matches[self.at]

    def label(self) -> str:
        """For the title: ``search 3/17``, ``search -/17`` before n, ``search 0 found``."""
        if self.pattern is None:
            return ""
        if not self.matches:
            return "search: 0 found"
        pos = str(self.at + 1) if self.at >= 0 else "-"
        return f"search {pos}/{len(self.matches)}"


def hscroll_label(scroll_x: float, max_scroll_x: float) -> str:
    """The title's word on lines wider than the pane: how far it is scrolled, or that they
    are cut (``←``/``→`` scroll), nothing when every line fits."""
    if scroll_x > 0:
        return f"→ scrolled {int(scroll_x)}"
    if max_scroll_x > 0:
        return "cut: ← →"
    return ""


def wrapped(lines: Sequence[str], width: int) -> list[str]:
    """Each line cut into pieces of at most ``width`` cells (wide characters counted as
    two), for the wrap mode: Textual's Log draws one row a line and never wraps."""
    if width < 1:
        return list(lines)
    out: list[str] = []
    for line in lines:
        out.extend(chop_cells(line, width) if line else [line])
    return out
