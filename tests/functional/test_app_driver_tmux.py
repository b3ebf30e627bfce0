"""The app's keys for real in a tmux pane, through Textual's terminal driver: a lone Escape is
a key (it closes the help screen), an arrow key's escape sequence arrives whole, and ``q``
ends the app at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from replay_util import replay_in_tmux
from tmux_util import Tmux

pytestmark = pytest.mark.slow


def test_escape_arrows_and_quit_reach_the_app_in_a_real_terminal(
    tmux: Tmux, tmp_path: Path
) -> None:
    replay_in_tmux(tmux, tmp_path)
    pid = int(tmux("display-message", "-p", "#{pane_pid}").strip())
    time.sleep(1.0)  # the first frames drawn
    tmux("send-keys", "?")
    tmux.wait("sample every host now")
    tmux("send-keys", "Escape")  # a lone Escape byte: a key once Textual's parser waited 0.1 s
    deadline = time.monotonic() + 5
    while "sample every host now" in tmux("capture-pane", "-p"):
        assert time.monotonic() < deadline, "a lone Escape did not close the help screen"
        time.sleep(0.1)
    tmux("send-keys", "Right")  # an escape sequence, read whole
    tmux.wait("sample 2/23")
    tmux("send-keys", "q")
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and "sample" in tmux("capture-pane", "-p"):
        assert time.monotonic() < deadline, "q did not end the app"
        time.sleep(0.1)
