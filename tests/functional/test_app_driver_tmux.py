"""The app's terminal driver (tui/app/driver.py) for real in a tmux pane: while nobody types,
no thread of the app wakes ten times a second (Textual's input thread polls at 10 Hz); a
lone Escape is still a key (it closes the help screen), arrow keys still arrive, and ``q``
still ends the app at once (setting the exit event wakes the sleeping input thread)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from replay_util import replay_in_tmux
from tmux_util import Tmux

pytestmark = pytest.mark.slow


def wakeups(pid: int) -> dict[str, int]:
    """Voluntary context switches of each thread of ``pid`` (each one a wait that ended)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                out[task.name] = int(line.split()[1])
    return out


def test_the_input_thread_sleeps_until_a_key_and_keys_still_work(
    tmux: Tmux, tmp_path: Path
) -> None:
    replay_in_tmux(tmux, tmp_path)
    pid = int(tmux("display-message", "-p", "#{pane_pid}").strip())
    time.sleep(1.0)  # the first frames drawn
    before = wakeups(pid)
    time.sleep(3.0)
    after = wakeups(pid)
    woke = {tid: after[tid] - before[tid] for tid in after if tid in before}
    # Textual's own driver: its input thread alone wakes about 30 times in 3 s.
    assert len(woke) >= 2 and max(woke.values()) < 10, woke
    tmux("send-keys", "?")
    tmux.wait("sample every host now")
    tmux("send-keys", "Escape")  # a lone Escape byte: a key once the parser's 0.1 s pass
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
