"""The log filter's fast path: the default filter, matched on the lower-cased line, shows and
hides exactly the lines the filter itself does (any case; non-ASCII lines take the filter)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.app.host.logs.lines import (
    DEFAULT_FILTER,
    LineStore,
    compile_filter,
    gap_line,
    passes_filter,
)

DEFAULT = compile_filter(DEFAULT_FILTER)
# Pieces of what the filter looks for, and of what it must not mistake for them.
_WORDS = [
    "error",
    "ERRNO",
    "Exception",
    "oom",
    "bOOm",
    "room",
    '  File "',
    "file",
    "tok/s",
    "Step",
    "steP",
    "exit",
    "not found",
    "ſtep",
    "\u212ailled",
    "killed",
    "Segmentation Fault",
]
_PIECES = st.one_of(st.sampled_from(_WORDS), st.text(max_size=4), st.sampled_from([" ", "\t", "_"]))


@given(st.lists(_PIECES, max_size=8))
def test_default_fast_path_matches_the_filter(pieces: list[str]) -> None:
    line = "".join(pieces)
    assert passes_filter(DEFAULT)(line) == bool(DEFAULT.search(line))


@given(st.lists(st.sampled_from(_WORDS), max_size=4).map(" ".join))
def test_any_other_filter_is_its_search(line: str) -> None:
    other = re.compile(r"(?i)step|oom")
    assert passes_filter(other)(line) == bool(other.search(line))


def test_store_hides_and_shows_as_the_filter_does() -> None:
    store = LineStore()
    store.pattern = DEFAULT
    lines = ["step=1 loss=2", "plain line", '  File "/x.py", line 3', "ROOM 12", "OOM killed"]
    assert store.add(lines) == 3
    assert store.take_pending() == ["step=1 loss=2", '  File "/x.py", line 3', "OOM killed"]
    assert store.hidden == 2
    assert store.set_filter(None) == lines and store.pattern is None


def test_the_default_filter_takes_the_fast_path() -> None:
    # The property above holds for any path; this one says the fast one is the one taken:
    # an ASCII line is matched lower-cased, without asking the case-blind pattern at all.
    asked: list[str] = []

    class Spy:
        pattern = DEFAULT_FILTER

        def search(self, line: str) -> object:
            asked.append(line)
            return DEFAULT.search(line)

    shows = passes_filter(Spy())  # type: ignore[arg-type]
    assert shows("Step 12 loss 0.5") and not shows("nothing to see")
    assert asked == []
    assert shows("ſtep 3") == bool(DEFAULT.search("ſtep 3")) and asked == ["ſtep 3"]


def test_a_store_no_widget_draws_drops_its_oldest_undrawn_lines_without_a_mark() -> None:
    """A hidden host's log: more lines than a tail keeps come while nothing draws them. Shown,
    the tail draws the newest lines, as a shown tail would hold them: no "lines not shown"
    mark, no "skipped (flood)" count. Drawn (not quiet), the same overflow is said."""
    quiet, loud = LineStore(max_lines=10), LineStore(max_lines=10)
    quiet.quiet = True
    lines = [f"line {i}" for i in range(25)]
    for i in range(0, 25, 5):  # a sample's few lines at a time
        quiet.add(lines[i : i + 5])
        loud.add(lines[i : i + 5])
    assert quiet.take_pending() == lines[-10:] and quiet.dropped == 0
    pending = loud.take_pending()
    assert "lines not shown" in pending[0] and loud.dropped > 0


def test_a_store_no_widget_holds_keeps_its_newest_lines_under_a_mark() -> None:
    """A log of a host whose pane was never made (or whose widgets were removed) keeps only
    ``shelf_lines`` of what arrives; drawn at last, it shows the newest ones under a mark
    that says how many went, and from then on keeps ``max_lines`` again."""
    store = LineStore(max_lines=100, shelf_lines=10)
    store.shelve()
    lines = [f"line {i}" for i in range(250)]
    for i in range(0, 250, 7):
        store.add(lines[i : i + 7])
        assert len(store.lines) <= 10 and len(store.pending) <= 10
    store.quiet = False  # a tail draws it
    pending = store.take_pending()
    assert pending[0] == gap_line("240 earlier lines not kept while not shown")
    assert pending[1:] == lines[-10:]
    assert store.dropped == 0  # not "skipped (flood)": the mark says what went, and why
    store.add([f"more {i}" for i in range(95)])
    assert len(store.lines) == 100 and store.lines[0] == "line 245"  # max_lines again
    # A filter change draws from the stored lines: their own mark, where they start.
    fresh = LineStore(max_lines=100, shelf_lines=10)
    fresh.shelve()
    fresh.add(lines[:30])
    fresh.quiet = False
    redrawn = fresh.set_filter(compile_filter("line 2"))
    assert redrawn == [gap_line("20 earlier lines not kept while not shown"), *lines[20:30]]


def test_a_filtered_store_on_the_shelf_counts_only_what_it_would_have_drawn() -> None:
    store = LineStore(max_lines=100, shelf_lines=4)
    store.pattern = compile_filter("error")
    store.shelve()
    for i in range(40):
        store.add([f"error {i}" if i % 4 == 0 else f"fine {i}"])
    store.quiet = False
    pending = store.take_pending()
    # 10 error lines came; the 4 newest are kept, the 6 before said in the mark.
    assert pending == [
        gap_line("6 earlier lines not kept while not shown"),
        *[f"error {i}" for i in (24, 28, 32, 36)],
    ]


def test_a_removed_tails_drawn_lines_go_back_to_the_shelf() -> None:
    """A pane's widgets removed: what its tail drew goes back to the store, which keeps the
    newest ``shelf_lines``; a tail made again draws them under the mark."""
    store = LineStore(max_lines=100, shelf_lines=5)
    store.quiet = False
    store.add([f"line {i}" for i in range(20)])
    drawn = store.take_pending()
    store.add(["line 20", "line 21"])  # arrived after the last draw
    assert store.undraw(drawn) == 17  # where a paused tail was scrolled moves by as many
    assert store.quiet and store.shelved
    store.quiet = False
    assert store.take_pending() == [
        gap_line("17 earlier lines not kept while not shown"),
        *[f"line {i}" for i in range(17, 22)],
    ]


def test_a_shelved_store_stays_bounded_when_a_tail_made_meanwhile_gives_its_lines_back() -> None:
    """A pane made and removed before its tails drew anything (paging through hosts): the
    store was shelved, and stays bounded whatever comes after."""
    store = LineStore(max_lines=100, shelf_lines=5)
    store.shelve()
    assert store.undraw([]) == 0
    store.add([f"line {i}" for i in range(60)])
    assert len(store.pending) <= 5 and len(store.lines) <= 5
    assert store.pending.maxlen == store.lines.maxlen == 5
