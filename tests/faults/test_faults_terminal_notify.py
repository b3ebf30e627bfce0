"""The app's opt-in terminal notification (``[alerts] terminal``): the real app in a
tmux pane whose raw output is recorded (``pipe-pane``). With ``terminal = "osc9"`` a failed
launch whose job wrote a hostile ``launch_error`` (OSC 52, OSC 0, CSI, NUL) yields one OSC 9
sequence whose text carries no ESC, BEL or NUL of the job's; with the default (off) and with
``osc777``/``bell`` the stream carries exactly what was asked for and nothing else."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_faults_escapes_app import PRINTF
from tmux_util import Tmux

ROOT = Path(__file__).resolve().parents[2]
OSC9 = re.compile(rb"\x1b\]9;([^\x07\x1b]*)\x07")
OSC777 = re.compile(rb"\x1b\]777;notify;([^;\x07\x1b]*);([^\x07\x1b]*)\x07")


def launch_failing(root: Path) -> dict:  # type: ignore[type-arg]
    job = f"sleep 10; printf '{PRINTF}' >\"$DFLASH_RUN_DIR/launch_error\"; exit 1"
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "launch", "--json", "--run-root",
         str(root), "--command", job, "--start-window", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    out = json.loads(res.stdout)
    assert out["ok"], out
    return out  # type: ignore[no-any-return]


@pytest.fixture
def killer() -> Iterator[list[int]]:
    pgids: list[int] = []
    yield pgids
    for g in pgids:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass


def record_app(tmux: Tmux, tmp_path: Path, terminal: str | None, killer: list[int]) -> bytes:
    """Launch the failing job, open the app on it in tmux until it shows the crash, quit; the
    raw bytes the app wrote."""
    root = tmp_path / "runs"
    killer.append(launch_failing(root)["pgid"])
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[alerts]\nterminal = "{terminal}"\n' if terminal else "")
    raw = tmp_path / "raw.bin"
    app = shlex.join([sys.executable, "-m", "dflash_tui.cli.main", "--config", str(cfg),
                      "--run-root", str(root), "--interval", "0.5"])  # fmt: skip
    tmux("new-session", "-d", "-x", "120", "-y", "40", f"sleep 1; exec {app}")
    tmux("pipe-pane", "-o", f"cat >>{shlex.quote(str(raw))}")
    deadline = time.monotonic() + 60
    while "LAUNCH-FAILED" not in (screen := tmux("capture-pane", "-p")):
        assert time.monotonic() < deadline, screen
        time.sleep(0.3)
    time.sleep(2.0)  # the alert goes out from a background task
    tmux("send-keys", "q")
    time.sleep(1.0)
    return raw.read_bytes()


def test_osc9_carries_the_alert_and_none_of_the_jobs_bytes(
    tmux: Tmux, tmp_path: Path, killer: list[int]
) -> None:
    stream = record_app(tmux, tmp_path, "osc9", killer)
    texts = OSC9.findall(stream)
    assert len(texts) == 1, stream[-3000:]
    text = texts[0]
    assert text.startswith(b"dflash launch-failed on local (run ") and b"after-nul" in text
    assert not re.search(rb"[\x00-\x1f\x7f]", text)
    assert b"\x1b]52;" not in stream and b"\x1b]0;PWNED" not in stream
    assert OSC777.findall(stream) == []


def test_osc777_when_asked(tmux: Tmux, tmp_path: Path, killer: list[int]) -> None:
    stream = record_app(tmux, tmp_path, "osc777", killer)
    found = OSC777.findall(stream)
    assert len(found) == 1 and found[0][0].startswith(b"dflash launch-failed on local")
    assert b"after-nul" in found[0][1] and OSC9.findall(stream) == []


def test_no_terminal_notification_by_default(tmux: Tmux, tmp_path: Path, killer: list[int]) -> None:
    stream = record_app(tmux, tmp_path, None, killer)
    assert b"LAUNCH-FAILED" in stream  # the app drew the crash
    assert OSC9.findall(stream) == [] and OSC777.findall(stream) == []
    assert b"\x1b]9;" not in stream and b"\x1b]777;" not in stream
