"""Training progress read from log lines: step, loss, accuracy and tok/s (pure).

Reads the pipeline's own format (``step=120 loss=2.31 acc=0.41 tok/s=2810``) and common
variants (``step: 120``, ``loss 2.31``, ``tok/s: 2.8K``, ``tokens/s=2,810``).

Non-finite numbers stay floats: ``loss=nan``, ``inf``, ``-inf``, ``Infinity`` and overflowing
literals such as ``1e309`` parse as ``float('nan')``/``±inf``, so a diverging run is visible
(see ``nonfinite_loss``). Only text that is not a number reads as None.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# A number (digits, or nan/inf/infinity as a whole word) and an optional K/M/G suffix.
_NUM = (
    r"([-+]?(?:\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|(?:nan|inf(?:inity)?)(?!\w)))"
    r"(?:\s*([kKmMgG])(?!\w))?"  # a suffix is a letter alone: "2.31 grad_norm" is not 2.31G
)
_STEP = re.compile(r"\b(?:global_)?step\s*[=:]?\s*(\d+)(?:\s*/\s*\d+)?", re.IGNORECASE)
_LOSS = re.compile(r"\bloss\s*[=:]?\s*" + _NUM, re.IGNORECASE)
_ACC = re.compile(r"\bacc(?:uracy)?\s*[=:]?\s*" + _NUM, re.IGNORECASE)
_TOKS = re.compile(r"\b(?:tok(?:en)?s?/s(?:ec)?|tps)\s*[=:]?\s*" + _NUM, re.IGNORECASE)
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
# A metric line names a step or a tok/s figure (see parse_line): a line holding none of these
# words can skip the four patterns above. The same flag, so the same case folding as theirs
# (``ſtep`` is a step to them); ASCII text takes the cheaper lower-case finds (1/5 the time),
# which also say where each pattern can start.
_MAYBE = re.compile(r"step|tok|tps", re.IGNORECASE)


@dataclass(frozen=True)
class Metric:
    step: int | None = None
    loss: float | None = None
    acc: float | None = None
    tok_s: float | None = None


def _num(m: re.Match[str] | None) -> float | None:
    """The matched number as a float; nan and ±inf (``1e309`` included) are kept as such."""
    if m is None:
        return None
    try:
        value = float(m.group(1).replace(",", ""))
    except ValueError:
        return None
    return value * _SUFFIX.get((m.group(2) or "").lower(), 1.0)


def nonfinite_loss(metric: Metric | None) -> bool:
    """True when the metric reports a loss that is nan or ±inf: the run has diverged."""
    return metric is not None and metric.loss is not None and not math.isfinite(metric.loss)


def _from(low: str, *words: str) -> int | None:
    """Where a match of a pattern starting with one of ``words`` can start at the earliest in
    ASCII text whose lower case is ``low`` (None: nowhere). A search from there finds what a
    search from the start finds (``\\b`` still looks at the character before), and skips the
    line's head: each pattern tried at every place costs more than the finds."""
    found = [at for at in map(low.find, words) if at >= 0]
    return min(found) if found else None


def _search(rx: re.Pattern[str], line: str, at: int | None) -> re.Match[str] | None:
    return None if at is None else rx.search(line, at)


def parse_line(line: str) -> Metric | None:
    """A Metric when the line reports a training step, else None."""
    if len(line) > 4096:  # a progress line is short; do not scan megabyte lines
        line = line[:4096]
    if not line.isascii():
        return _parse(line, 0, 0, 0, 0) if _MAYBE.search(line) is not None else None
    low = line.lower()
    step_at, toks_at = _from(low, "step"), _from(low, "tok", "tps")
    if step_at is None and toks_at is None:
        return None
    # "global_step" starts 7 characters before its "step"
    step_from = None if step_at is None else max(step_at - 7, 0)
    return _parse(line, step_from, toks_at, _from(low, "loss"), _from(low, "acc"))


def _parse(
    line: str, step_at: int | None, toks_at: int | None, loss_at: int | None, acc_at: int | None
) -> Metric | None:
    step_m = _search(_STEP, line, step_at)
    toks = _num(_search(_TOKS, line, toks_at))
    loss = _num(_search(_LOSS, line, loss_at))
    if step_m is None and toks is None and loss is None:
        return None
    step = int(step_m.group(1)) if step_m else None
    if step is None and toks is None:
        return None  # a lone "loss" word is too weak a signal
    if loss is None and toks is None:
        return None  # "checkpoint step=60": names a step, reports no training figure
    return Metric(step=step, loss=loss, acc=_num(_search(_ACC, line, acc_at)), tok_s=toks)


def newest_metrics(lines: Sequence[str], keep: int) -> list[Metric]:
    """The metrics of the newest ``keep`` metric lines, oldest first, and older ones only as
    far back as the newest one with a step (the progress folds that one).

    What a tracker keeping ``keep`` metrics would hold after parsing every line: a sample of
    thousands of lines parses only its end (the parse holds the GIL the UI needs)."""
    found: list[Metric] = []
    has_step = False
    for line in reversed(lines):
        if len(found) >= keep and has_step:
            break
        m = parse_line(line)
        if m is not None:
            found.append(m)
            has_step = has_step or m.step is not None
    found.reverse()
    return found


@dataclass(frozen=True)
class Progress:
    """The run's progress so far, folded from metric lines as they arrive (see ``advance``)."""

    last_step: int | None = None
    last_step_at: float | None = None
    typical_interval: float | None = None  # seconds per step, smoothed
    last: Metric | None = None


def advance(prev: Progress, metric: Metric, at: float) -> Progress:
    """Fold one metric seen at time ``at`` into the progress (pure)."""
    if metric.step is None or (prev.last_step is not None and metric.step <= prev.last_step):
        if metric.step is not None and prev.last_step is not None and metric.step < prev.last_step:
            return Progress(metric.step, at, None, metric)  # a new run restarted the count
        return Progress(prev.last_step, prev.last_step_at, prev.typical_interval, metric)
    interval = prev.typical_interval
    if prev.last_step is not None and prev.last_step_at is not None and at > prev.last_step_at:
        per_step = (at - prev.last_step_at) / (metric.step - prev.last_step)
        interval = per_step if interval is None else 0.8 * interval + 0.2 * per_step
    return Progress(metric.step, at, interval, metric)
