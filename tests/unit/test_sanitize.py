from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dflash_tui.core.base.text import printable, strip_escapes, with_host


def test_printable_shows_controls() -> None:
    assert printable("a\x1b[2Jb\x00\x9b\tc") == "a\\x1b[2Jb\\x00\\x9b\tc"


def test_strip_escapes() -> None:
    s = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07done \x1b]8;;http://x\x1b\\link"
    assert strip_escapes(s) == "red done link"


@given(st.text())
def test_nothing_raw_gets_through(s: str) -> None:
    out = strip_escapes(s)
    assert not any((ord(c) < 32 and c != "\t") or 0x7F <= ord(c) <= 0x9F for c in out)


@pytest.mark.parametrize(
    ("label", "text", "said"),
    [
        (
            "local",
            "the probe printed nothing (exit 1)",
            "local: the probe printed nothing (exit 1)",
        ),
        ("local", "local: the probe printed nothing", "local: the probe printed nothing"),
        ("gpu-a", "ssh gpu-a: connection lost", "ssh gpu-a: connection lost"),
        ("local", "state failed on local (exit 1): x", "state failed on local (exit 1): x"),
        ("127.0.0.1:1", "ssh 127.0.0.1:1: cannot connect", "ssh 127.0.0.1:1: cannot connect"),
        ("local", "cannot open local file", "local: cannot open local file"),
        ("gpu-a", "gpu-ab: no route", "gpu-a: gpu-ab: no route"),
    ],
)
def test_an_error_names_its_host_once(label: str, text: str, said: str) -> None:
    assert with_host(label, text) == said
