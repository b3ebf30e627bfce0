"""When the feeds start, the app raises the collector's young threshold (tui/app/heap.py:
short-lived per-sample objects die before a young collection promotes them), never lowers one
already higher, and puts it back when it leaves."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from dflash_tui.app.heap import GC_YOUNG, restore_collector, tune_collector


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    kept = gc.get_threshold()
    yield
    gc.set_threshold(*kept)


def test_the_young_threshold_is_raised_and_the_older_kept() -> None:
    gc.set_threshold(700, 11, 12)
    tune_collector()
    assert gc.get_threshold() == (GC_YOUNG, 11, 12)


def test_a_higher_threshold_is_left_as_it_is() -> None:
    gc.set_threshold(GC_YOUNG * 2, 10, 10)
    tune_collector()
    assert gc.get_threshold() == (GC_YOUNG * 2, 10, 10)


def test_leaving_the_app_puts_the_young_threshold_back() -> None:
    gc.set_threshold(700, 10, 10)
    tune_collector()
    tune_collector()  # a second start of the feeds keeps the first threshold to go back to
    restore_collector()
    assert gc.get_threshold() == (700, 10, 10)
    restore_collector()  # nothing raised: nothing to put back
    assert gc.get_threshold() == (700, 10, 10)
