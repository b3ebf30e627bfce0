"""The line store behind a log tail (pure; no Textual): sanitised, bounded, filterable.

Lines arrive in bursts (a sample can carry thousands). Everything here is O(lines) with small
constants and never holds more than ``max_lines`` lines, whatever arrives.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from dflash_tui.core.base.text import clean_line

MAX_LINES = 5000
# Lines kept of a log no widget holds (its host's pane not made yet, or its widgets removed):
# 64 hosts' runs with three logs each would otherwise keep 5,000 lines a log, some 3 MiB a host,
# for tails nobody has opened. Shown, the tail holds the newest of them under a mark that says
# how many earlier ones went (the file on the host has them), and keeps MAX_LINES from then on.
SHELF_LINES = 500
# What the seed's operator grepped for: errors, exceptions, progress, compile/warm-up milestones,
# and every line that says something failed (a failed launch's only line, a crash's first one:
# `sh: 1: x: not found`, `CUDA out of memory`, `OOMKilled`, `Segmentation fault`, `Aborted`).
DEFAULT_FILTER = (
    r"(?i)error|errno|exception|traceback|fatal|fail|killed|abort|panic|segmentation fault"
    r"|out of memory|\boom|not found|no such file|denied"
    r'|step|tok/s|tokens/s|compil|warm|loaded|exit|^\s+File "'
)
GAP_MARK = "┄┄ "  # a marked gap in a tail (lines not shown, a rotation): shown whatever the filter
# The default filter without (?i), lower-cased (its escapes are lower-case already: \s, \b). On
# an ASCII line it finds in ``line.lower()`` what the default finds in the line (ASCII case
# folding is lower()), in a quarter of the time: a case-blind alternation cannot skip ahead by
# its literals, and a flood's sample of 2,000 plain lines cost 22 ms of the event loop.
_DEFAULT_LOWER = re.compile(DEFAULT_FILTER.removeprefix("(?i)").lower())
ERROR_RE = re.compile(
    r"(?i)\b(error|exception|traceback|fatal|failed|failure|killed|out of memory|oom"
    r"|segmentation fault)\b"
    r"|^\s*File \".*\", line \d+"
)


def _every_line(_line: str) -> bool:
    return True  # no filter: an empty line shows too


class LineStore:
    """All recent lines of one log (bounded) plus the filtered lines not yet drawn."""

    def __init__(self, max_lines: int = MAX_LINES, shelf_lines: int = SHELF_LINES) -> None:
        self.max_lines = max_lines
        self.shelf_lines = min(shelf_lines, max_lines)
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.pending: deque[str] = deque(maxlen=max_lines)
        self._pattern: re.Pattern[str] | None = None
        self._passes: Callable[[str], bool] = _every_line
        self.received = 0  # lines seen since the tail started (including dropped ones)
        self.dropped = 0  # lines that arrived but were evicted before being drawn
        self.shown = 0  # lines that passed the filter since it was last set
        self.undrawn = 0  # lines evicted from ``pending`` since the last draw (said in a mark)
        self.hidden = 0  # lines the filter kept out since it was last set (said in the tail)
        # No widget draws these lines now (the host's pane hidden): the oldest undrawn lines
        # go as the store's own do, with no mark and no count, since the view, drawn when
        # shown, then holds the newest lines as the store does: nothing is missing from it
        # that a shown tail would have kept.
        self._quiet = False
        # Shelved (``shelve``: no widget holds the lines at all): only the newest
        # ``shelf_lines`` are kept, and these count what went of the stored lines and of the
        # undrawn ones, for the marks a tail made later draws first (not "skipped": nothing
        # came faster than it could be drawn).
        self.shelf_gone = 0
        self.shelf_undrawn = 0

    @property
    def quiet(self) -> bool:
        return self._quiet

    @quiet.setter
    def quiet(self, quiet: bool) -> None:
        self._quiet = quiet
        if not quiet:
            self._unshelve()

    @property
    def shelved(self) -> bool:
        return self.lines.maxlen != self.max_lines

    def shelve(self) -> int:
        """No widget holds these lines (the pane is not made, or its widgets are removed):
        quiet, and only the newest ``shelf_lines`` stored and undrawn lines are kept. Returns
        how many undrawn lines that cut."""
        self._quiet = True
        cut = max(0, len(self.pending) - self.shelf_lines)
        self.shelf_gone += max(0, len(self.lines) - self.shelf_lines)
        self.shelf_undrawn += cut
        self.lines = deque(self.lines, maxlen=self.shelf_lines)
        self.pending = deque(self.pending, maxlen=self.shelf_lines)
        return cut

    def _unshelve(self) -> None:
        """A tail draws the store: MAX_LINES again, with a mark before the oldest line kept
        where earlier ones went (in the lines a filter change draws, and in those to draw)."""
        if not self.shelved:
            return
        self.lines = deque(self.lines, maxlen=self.max_lines)
        self.pending = deque(self.pending, maxlen=self.max_lines)
        for gone, kept in ((self.shelf_gone, self.lines), (self.shelf_undrawn, self.pending)):
            if gone:
                kept.appendleft(gap_line(f"{gone:,} earlier lines not kept while not shown"))
        self.shelf_gone = self.shelf_undrawn = 0

    @property
    def pattern(self) -> re.Pattern[str] | None:
        """The filter (None: every line shows)."""
        return self._pattern

    @pattern.setter
    def pattern(self, pattern: re.Pattern[str] | None) -> None:
        self._pattern = pattern
        self._passes = _every_line if pattern is None else passes_filter(pattern)

    def add(self, raw: Iterable[str]) -> int:
        """Take new raw lines; returns how many passed the filter."""
        batch = raw if isinstance(raw, list | tuple) else list(raw)
        self.received += len(batch)
        if len(batch) > self.max_lines:  # older ones would be evicted at once: skip their work
            self.dropped += len(batch) - self.max_lines
            batch = batch[-self.max_lines :]
        return self._store([clean_line(x) for x in batch])

    def add_sample(self, items: Sequence[tuple[bool, str]]) -> int:
        """One sample's lines with the tail's gap marks in place (``(True, text)``); returns
        how many passed the filter. More than ``max_lines`` at once: the oldest lines go, never
        a mark, and a mark of our own says how many."""
        self.received += sum(1 for is_mark, _ in items if not is_mark)
        over = len(items) - self.max_lines
        clean = []
        if over > 0:
            over += 1  # room for the mark that says so
            self.dropped += over
            clean.append(
                gap_line(f"{over:,} lines not shown: more than {self.max_lines:,} came at once")
            )
        for is_mark, text in items:
            if is_mark:
                clean.append(gap_line(text))
            elif over > 0:
                over -= 1
            else:
                clean.append(clean_line(text))
        return self._store(clean)

    def mark(self, text: str) -> None:
        """A gap in the tail, marked where it happened; every filter shows it."""
        self._store([gap_line(text)])

    def _store(self, clean: list[str]) -> int:
        shelved = self.shelved
        if shelved:
            self.shelf_gone += max(0, len(self.lines) + len(clean) - self.shelf_lines)
        self.lines.extend(clean)
        before = len(self.pending)
        shown = clean if self.pattern is None else [x for x in clean if self._shows(x)]
        self.shown += len(shown)
        self.hidden += len(clean) - len(shown)
        overflow = before + len(shown) - (self.pending.maxlen or 0)
        self.pending.extend(shown)
        if overflow > 0 and shelved:
            self.shelf_undrawn += overflow
        elif overflow > 0 and not self.quiet:  # more came than were drawn: say so
            fresh = not self.undrawn  # the first overflow takes one more line for the mark
            self.undrawn += overflow + fresh
            self.dropped += overflow + fresh
            self.pending[0] = gap_line(f"{self.undrawn:,} lines not shown: more came than drawn")
        return len(shown)

    def _shows(self, line: str) -> bool:
        return line.startswith(GAP_MARK) or self._passes(line)

    def take_pending(self) -> list[str]:
        out = list(self.pending)
        self.pending.clear()
        self.undrawn = 0
        return out

    def undraw(self, drawn: Sequence[str]) -> int:
        """The lines a view drew, back before the lines it had not drawn yet, and no view
        draws from here on: its widgets are removed, the store is shelved, and the view made
        again draws what is pending, the newest ``shelf_lines`` under a mark. Returns how many
        of the oldest drawn and undrawn lines that cut (where a paused view was scrolled)."""
        kept: deque[str] = deque(drawn, maxlen=self.max_lines)
        kept.extend(self.pending)
        self.pending = kept
        return self.shelve()

    def set_filter(self, pattern: re.Pattern[str] | None) -> list[str]:
        """Change the filter; returns every stored line that now shows (for a redraw)."""
        self.pattern = pattern
        self.pending.clear()
        self.undrawn = 0
        kept = [x for x in self.lines if self._shows(x)]
        self.shown = len(kept)
        self.hidden = len(self.lines) - len(kept)
        return kept

    def clear(self) -> None:
        self.lines.clear()
        self.pending.clear()
        self.shelf_gone = self.shelf_undrawn = 0


def passes_filter(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """Whether a line shows under ``pattern``: ``pattern.search``, the default filter's on the
    lower-cased line where that finds the same."""
    search = pattern.search
    if pattern.pattern != DEFAULT_FILTER:
        return lambda line: search(line) is not None
    lower = _DEFAULT_LOWER.search
    return lambda line: (lower(line.lower()) if line.isascii() else search(line)) is not None


def gap_line(text: str) -> str:
    return GAP_MARK + clean_line(text) + " ┄┄"


def compile_filter(text: str) -> re.Pattern[str]:
    """Compile a user's filter; raises ValueError with a readable message."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"filter {text!r} is not a valid regular expression: {exc}") from None
