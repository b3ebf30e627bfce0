"""Plain terminals: without a TTY, with TERM=dumb or an ASCII stdout the app refuses
in one line naming what works there (exit 2); ``status --watch`` prints plain lines per change
and ends on Ctrl-C with exit 0."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from fakes.scenario import FakeSmi
from supervise_util import cli

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_tty_the_app_points_to_status(tmp_path: Path) -> None:
    res = cli("--run-root", str(tmp_path))
    assert res.returncode == 2
    assert "needs a terminal" in res.stderr and "dflash-tui status --watch" in res.stderr


def in_pty(env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    main, sub = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "--run-root", str(tmp_path)],
        stdin=sub, stdout=sub, stderr=sub, cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(sub)
    rc = proc.wait(timeout=60)
    out = b""
    try:
        while chunk := os.read(main, 65536):
            out += chunk
    except OSError:
        pass
    os.close(main)
    return rc, out.decode("utf-8", "replace")


def test_term_dumb_and_an_ascii_stdout_are_refused_with_a_hint(tmp_path: Path) -> None:
    rc, out = in_pty(dict(os.environ, TERM="dumb"), tmp_path)
    assert rc == 2 and "TERM=dumb" in out and "status --watch" in out and "LANG=C.UTF-8" in out
    env = dict(os.environ, TERM="xterm-256color", LANG="C", LC_ALL="C", PYTHONIOENCODING="ascii")
    rc, out = in_pty(env, tmp_path)
    assert rc == 2 and "encoding ascii" in out and "LANG=C.UTF-8" in out


def test_status_watch_prints_plain_lines_until_ctrl_c(tmp_path: Path, fake_smi: FakeSmi) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--watch", "--interval", "0.5",
         "--run-root", str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(3)]
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    text = "".join(lines) + out
    assert "\x1b" not in text
    assert re.search(r"^\S+Z run none", text, re.M), text
    assert re.search(r"finding \w+ busy-no-memory GPU 2\b", text), text  # the seed incident
