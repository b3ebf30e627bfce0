"""nan and inf in step lines: parsed as floats (a diverging loss stays visible), drawn without
raising (sparklines, bars), and formatted literally in the metrics strip."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.app.host.metrics import fmt_value
from dflash_tui.app.widgets.spark import _TICKS, bar, sparkline
from dflash_tui.core.diagnosis.progress import Metric, nonfinite_loss, parse_line

NAN, INF = float("nan"), float("inf")


def same(a: float | None, b: float | None) -> bool:
    """Equality that holds for nan == nan (Metric's own == never does)."""
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(
    ("line", "loss", "acc", "toks"),
    [
        ("step=1 loss=nan acc=0.1 tok/s=inf", NAN, 0.1, INF),
        ("step=1 loss=NaN acc=nan tok/s=-inf", NAN, NAN, -INF),
        ("step=1 loss=-nan tok/s=1e309", NAN, None, INF),
        ("step=1 loss=inf tok/s=5", INF, None, 5.0),
        ("step=1 loss=+Infinity tok/s=5", INF, None, 5.0),
        ("step=1 loss=-inf tok/s=5", -INF, None, 5.0),
        ("step=1 loss=1e309 tok/s=5", INF, None, 5.0),
        ("step=1 loss=-1e309 tok/s=5", -INF, None, 5.0),
        ("step: 4 | loss: nan | tok/s: 2.8K", NAN, None, 2800.0),
        ("step=1 loss=2.5 tok/s=1e309", 2.5, None, INF),
    ],
)
def test_non_finite_numbers_stay_floats(
    line: str, loss: float | None, acc: float | None, toks: float | None
) -> None:
    m = parse_line(line)
    assert m is not None and m.step is not None
    assert same(m.loss, loss) and same(m.acc, acc) and same(m.tok_s, toks)


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("step=1 loss=abc tok/s=5", Metric(1, None, None, 5.0)),
        ("step=1 loss=information tok/s=5", Metric(1, None, None, 5.0)),
        ("step=1 loss=nano acc=infx tok/s=5", Metric(1, None, None, 5.0)),
        ("step=1 loss=inf0 tok/s=5", Metric(1, None, None, 5.0)),
        ("step=1 loss=- tok/s=5", Metric(1, None, None, 5.0)),
    ],
)
def test_text_that_is_not_a_number_is_none(line: str, expect: Metric) -> None:
    assert parse_line(line) == expect


@pytest.mark.parametrize(
    "line", ["loss of information", "checkpoint step=60", "loss=nan", "stepping stone inf"]
)
def test_non_finite_words_add_no_metric_lines(line: str) -> None:
    assert parse_line(line) is None


def test_nonfinite_loss() -> None:
    assert nonfinite_loss(parse_line("step=1 loss=nan tok/s=5"))
    assert nonfinite_loss(parse_line("step=1 loss=inf"))
    assert nonfinite_loss(Metric(1, -INF))
    assert not nonfinite_loss(parse_line("step=1 loss=2.0 tok/s=inf"))
    assert not nonfinite_loss(Metric(1, None, None, 3.0))
    assert not nonfinite_loss(None)


# -- drawing --

ok = set(_TICKS) | {" "}


@pytest.mark.parametrize(
    ("values", "lo"),
    [
        ([NAN], None),
        ([INF], None),
        ([-INF], None),
        ([NAN, INF, -INF, None], None),
        ([NAN, INF, -INF, None], 0.0),
        ([1.0, NAN, 2.0, INF, 3.0, -INF], None),
        ([1.0, NAN, 2.0, INF, 3.0, -INF], 0.0),
        ([-1e308, 1e308, 0.0], None),
        ([INF, INF, INF], 0.0),
    ],
)
def test_sparkline_tolerates_non_finite(values: list[float | None], lo: float | None) -> None:
    out = sparkline(values, 8, lo=lo)
    assert len(out) == 8 and set(out) <= ok


def test_sparkline_non_finite_points_are_skipped_or_clamped() -> None:
    assert sparkline([NAN, NAN], 4, lo=None) == "    "  # nothing finite: an empty line
    out = sparkline([1.0, 3.0, INF, NAN, -INF], 5, lo=None)
    assert out == "▁█" + _TICKS[-1] + " " + _TICKS[0]  # the scale is the finite points'
    assert sparkline([1.0, 2.0, 3.0], 3, lo=None) == "▁▅█"  # finite input draws as usual


def test_sparkline_of_only_non_finite_points_is_empty() -> None:
    for values in ([INF, INF], [-INF, -INF], [NAN, INF, -INF], [None, NAN]):
        for lo in (None, 0.0, NAN, INF):
            assert sparkline(values, 6, lo=lo) == " " * 6


@given(
    st.lists(st.one_of(st.none(), st.floats()), max_size=40),
    st.integers(min_value=0, max_value=30),
    st.one_of(st.none(), st.floats()),
    st.one_of(st.none(), st.floats()),
)
def test_sparkline_never_raises(
    values: list[float | None], width: int, lo: float | None, hi: float | None
) -> None:
    out = sparkline(values, width, lo=lo, hi=hi)
    assert len(out) == width and set(out) <= ok


@given(st.one_of(st.none(), st.floats()), st.integers(min_value=0, max_value=20))
def test_bar_never_raises(fraction: float | None, width: int) -> None:
    assert len(bar(fraction, width)) == width


def test_bar_of_nan_is_unknown() -> None:
    assert bar(NAN, 4) == bar(None, 4)


@pytest.mark.parametrize(
    ("value", "expect"),
    [(NAN, "nan"), (INF, "inf"), (-INF, "-inf"), (None, "-"), (2.0, "2.000")],
)
def test_fmt_value_shows_non_finite_literally(value: float | None, expect: str) -> None:
    assert fmt_value(value) == expect
    if value is not None and not math.isfinite(value):
        assert fmt_value(value, si_units=True) == expect


def test_fmt_value_si() -> None:
    assert fmt_value(2810.0, si_units=True) == "2.8K"


@pytest.mark.parametrize(
    ("line", "loss", "tok_s"),
    [
        ("step=1 loss=2.31 grad_norm=1.0 tok/s=5", 2.31, 5.0),
        ("step=1 loss=2.31 mem=3 tok/s=5 ms/step=4", 2.31, 5.0),
        ("step=1 loss=2.31 tok/s=5 ms/step=4", 2.31, 5.0),
        ("step=1 loss=2.31 tok/s=5.2K lr=1", 2.31, 5200.0),
        ("step=1 loss=2.31 tok/s=3 M", 2.31, 3e6),
    ],
)
def test_a_unit_suffix_is_a_letter_alone(line: str, loss: float, tok_s: float) -> None:
    m = parse_line(line)
    assert m is not None and m.loss == loss and m.tok_s == tok_s
