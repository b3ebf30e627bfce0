"""``dflash-tui replay`` for real in a tmux pane (its own server, 120x40): the recording of a
run that is SIGKILLed after its last lines; ``]`` steps from event to event up to the crash,
where the log pane shows the last lines before it and the header the exit; ``←`` goes back
a sample and the header says running again; ``g +30s`` goes to a time. Only lines up to the
sample shown are ever on screen."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from replay_util import LAST_LINES, replay_in_tmux
from tmux_util import Tmux

pytestmark = pytest.mark.slow


def test_step_to_the_crash_with_the_bracket_key_shows_the_last_lines(
    tmux: Tmux, tmp_path: Path
) -> None:
    replay_in_tmux(tmux, tmp_path)
    screen = tmux("capture-pane", "-p")
    assert "RUNNING" in screen and "READ-ONLY" in screen
    assert LAST_LINES[0] not in screen and "step=299" not in screen  # not yet written
    for key in ("l", "k", "r", "K"):  # no control key in a replay: nothing happens
        tmux("send-keys", key)
    tmux("send-keys", "]")
    tmux.wait("sample 21/23")
    screen = tmux.wait(LAST_LINES[1])  # the pane writes its lines at 20 Hz
    assert "here: crash" in screen
    # a kill nobody asked for is named by its signal in the header (not KILLED)
    assert " SIGKILL " in screen and "exit 137: SIGKILL" in screen
    for line in LAST_LINES:  # the last lines before the crash, at the bottom of the pane
        assert line in screen
    log_rows = [r for r in screen.splitlines() if r.startswith("step=")]
    assert log_rows[-1].startswith(LAST_LINES[0])
    tmux("send-keys", "Left")
    tmux.wait("sample 20/23")
    tmux.wait("step=299 loss=0.708")
    time.sleep(0.5)  # the panes redrawn from the state at sample 20, not a frame before
    screen = tmux("capture-pane", "-p")
    assert "RUNNING" in screen and "SIGKILL" not in screen.split("\n", 3)[2]
    assert LAST_LINES[1] not in screen  # written after this sample
    tmux("send-keys", "g")
    time.sleep(0.5)
    tmux("send-keys", "+30s", "Enter")
    tmux.wait("sample 7/23")
    tmux.wait("step=169 ")
    time.sleep(0.5)
    screen = tmux("capture-pane", "-p")
    assert "+0m30s" in screen and "step=169 " in screen and "step=170 " not in screen
    tmux("send-keys", "q")
    deadline = time.monotonic() + 10
    while "sample" in tmux("capture-pane", "-p"):
        assert time.monotonic() < deadline, "q did not quit"
        time.sleep(0.2)
