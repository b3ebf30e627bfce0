"""The one byte-to-line splitter under a cap (a probe's stdout, a recorded segment)."""

from dflash_tui.core.base.lines import LineSplitter


def test_lines_across_chunks_and_a_line_over_the_cap_stands_as_its_size() -> None:
    split = LineSplitter(8)
    out = [*split.feed(b"ab"), *split.feed(b"c\nde"), *split.feed(b"x" * 10), *split.feed(b"y\nz")]
    assert out == [b"abc", 13]  # "de" + 10 x + "y": dropped as it streamed, its size kept
    assert split.pending == 1 and split.end() == b"z"


def test_a_stream_that_ends_inside_an_oversize_line_says_its_size() -> None:
    split = LineSplitter(4)
    assert list(split.feed(b"ok\n" + b"q" * 9)) == [b"ok"]
    assert split.end() == 9 and split.pending == 9
    assert LineSplitter(4).end() is None
