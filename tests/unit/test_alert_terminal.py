"""The opt-in terminal notification's bytes (pure): bell, OSC 9, OSC 777, and nothing of an
alert's untrusted text can end the sequence early or start another one."""

from __future__ import annotations

import re

import pytest

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.terminal import terminal_sequence

HOSTILE = "crash \x1b]52;c;UFdORUQ=\x07\x1b]0;PWNED\x07\x1b[21t\x00after-nul;x\nnext"


def alert(message: str = "run 7 exited (exit 1)") -> Alert:
    return Alert("run-exited", "error", message, "gpu-a", 0.0, "7")


def test_kinds() -> None:
    assert terminal_sequence("off", alert()) == ""
    assert terminal_sequence("bell", alert()) == "\x07"
    assert terminal_sequence("osc9", alert()) == (
        "\x1b]9;dflash run-exited on gpu-a (run 7): run 7 exited (exit 1)\x07"
    )
    assert terminal_sequence("osc777", alert()) == (
        "\x1b]777;notify;dflash run-exited on gpu-a (run 7);run 7 exited (exit 1)\x07"
    )


@pytest.mark.parametrize("kind", ["osc9", "osc777"])
def test_hostile_text_stays_inside_one_sequence(kind: str) -> None:
    seq = terminal_sequence(kind, alert(HOSTILE))
    body = seq[len(f"\x1b]{kind[3:]};") : -1]
    assert seq.endswith("\x07") and not re.search("[\x00-\x1f\x7f-\x9f]", body)
    assert "after-nul" in body and "PWNED" not in body and "UFdORUQ" not in body


def test_osc777_title_cannot_shift_the_body() -> None:
    a = Alert("run-exited", "error", "m", "host;evil", 0.0)
    seq = terminal_sequence("osc777", a)
    assert seq.count(";") == 3 and seq.endswith(";m\x07")
