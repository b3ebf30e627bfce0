"""No raw escape sequence from a job reaches the terminal through the app.

The app runs for real in a tmux pane (its own tmux server) whose raw output stream is
recorded with ``pipe-pane``. A launched job writes its own ``launch_error`` file with OSC 52,
OSC 0, OSC 8, CSI 21t, DCS and NUL payloads and fails: the app's "launch failed" toast, the
header and the findings quote it. Not one payload sequence may appear in the raw stream, the
pane's title must not change and tmux's clipboard buffers must stay empty.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tmux_util import Tmux

ROOT = Path(__file__).resolve().parents[2]
PRINTF = (
    r"\033]52;c;UFdORUQ=\007\033]0;PWNED-TITLE\007\033]8;;http://evil.example/\007link"
    r"\033]8;;\007\033[21t\033P+q50574e\033\\\000after-nul"
)
# What the payload would put in the stream if it got through (Textual's own output has none).
SEQUENCES = (b"\x1b]52;", b"\x1b]0;PWNED", b"\x1b]8;;http://evil", b"\x1b[21t", b"\x1bP+q", b"\0")


def dflash(*args: str) -> dict:  # type: ignore[type-arg]
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    return json.loads(res.stdout)


def test_the_crash_toast_quotes_a_hostile_launch_error_safely(tmux: Tmux, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    job = f"sleep 8; printf '{PRINTF}' >\"$DFLASH_RUN_DIR/launch_error\"; exit 1"
    run = dflash(
        "launch", "--json", "--run-root", str(root), "--command", job, "--start-window", "1"
    )
    assert run["ok"], run
    raw = tmp_path / "raw.bin"
    app = shlex.join(
        [sys.executable, "-m", "dflash_tui.cli.main", "--run-root", str(root), "--interval", "0.5"]
    )
    tmux("new-session", "-d", "-x", "120", "-y", "40", f"sleep 1; exec {app}")
    tmux("set-option", "-g", "set-clipboard", "on")  # OSC 52 would fill tmux's buffers
    tmux("set-option", "-g", "allow-rename", "on")
    tmux("pipe-pane", "-o", f"cat >>{shlex.quote(str(raw))}")
    try:
        deadline = time.monotonic() + 60
        while "launch failed" not in (screen := tmux("capture-pane", "-p")):
            assert time.monotonic() < deadline, screen
            time.sleep(0.3)
        title = tmux("display-message", "-p", "#{pane_title}")
        buffers = tmux("list-buffers")
        tmux("send-keys", "q")
        time.sleep(1.0)
    finally:
        try:
            os.killpg(run["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    stream = raw.read_bytes()
    assert b"after-nul" in stream and "after-nul" in screen  # quoted, as plain text
    found = {seq: stream.count(seq) for seq in SEQUENCES if seq in stream}
    assert found == {}
    assert "PWNED" not in title and "UFdORUQ" not in buffers and "PWNED" not in buffers
