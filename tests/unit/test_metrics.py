from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.core.diagnosis.progress import Metric, Progress, advance, parse_line


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        (
            "step=120 loss=2.3100 acc=0.410 tok/s=2810 lr=1e-4 tq=2 dq=1",
            Metric(120, 2.31, 0.41, 2810.0),
        ),
        ("[rank0] step: 7/100 | loss: 5.5 | tok/s: 2.8K", Metric(7, 5.5, None, 2800.0)),
        ("global_step 9 tokens/s=2,810", Metric(9, None, None, 2810.0)),
        ("Step 3 loss 1.0e-1", Metric(3, 0.1, None, None)),
        ("throughput tps=1.5M", Metric(None, None, None, 1.5e6)),
    ],
)
def test_formats(line: str, expect: Metric) -> None:
    assert parse_line(line) == expect


@pytest.mark.parametrize(
    "line", ["", "loss of signal", "Traceback (most recent call last):", "stepping stone"]
)
def test_not_metrics(line: str) -> None:
    assert parse_line(line) is None


@given(st.text(max_size=200))
def test_never_raises(line: str) -> None:
    parse_line(line)


def test_progress_interval_and_restart() -> None:
    p = advance(Progress(), Metric(step=1), 100.0)
    p = advance(p, Metric(step=3), 104.0)
    assert p.last_step == 3 and p.typical_interval == pytest.approx(2.0)
    p = advance(p, Metric(step=3), 110.0)  # a repeated step is not progress
    assert p.last_step_at == 104.0
    p = advance(p, Metric(step=1), 120.0)  # a new run starts counting again
    assert p.last_step == 1 and p.typical_interval is None


_WORDS = st.sampled_from(["step", "STEP", "ſtep", "tok/s", "TOK/S", "toKs/s", "tps", "TPS", "loss"])


@given(
    st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=6), st.sampled_from(["=", " ", ": "])
)
def test_prefilter_passes_every_metric_line(parts: list[str], sep: str) -> None:
    # The cheap test before the patterns never hides a line they read (any case, any script).
    line = " ".join(f"{p}{sep}12" for p in parts) + " loss=1.5"
    expect = _slow_parse(line)
    assert parse_line(line) == expect


def _slow_parse(line: str) -> Metric | None:
    """parse_line without its prefilter (the patterns alone, each searched from the start)."""
    from dflash_tui.core.diagnosis import progress

    return progress._parse(line[:4096], 0, 0, 0, 0)


@pytest.mark.parametrize("line", ["ſtep=3 loss=2.0", "STEP=3 LOSS=2", "x TPS=5", "to\u212a/s 7"])
def test_prefilter_case_folding(line: str) -> None:
    assert parse_line(line) is not None


_PIECES = st.sampled_from(
    ["step", "global_step", "Global_Step", "xstep", "_step", "steps", "loss", "xloss", "acc",
     "Accuracy", "tok/s", "tokens/s", "TOK/SEC", "tps", "atps", "=", ":", " ", "12", "3.5K",
     "nan", "/", "-1e3", ",", "_", "\u017f", "ﬆ"]
)  # fmt: skip


@given(st.lists(_PIECES, max_size=16))
def test_searches_from_the_first_word_find_what_searches_from_the_start_find(
    parts: list[str],
) -> None:
    # Each pattern is searched from where its word first is: the same metric (repr: a nan
    # is not equal to itself) as the patterns searched from the line's start.
    line = "".join(parts)
    assert repr(parse_line(line)) == repr(_slow_parse(line))
