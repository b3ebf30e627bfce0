"""A private tmux server (its own socket) for tests that read the screen or the raw bytes a
terminal gets; the ``tmux`` fixture (tests/conftest.py) gives one per test."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


class Tmux:
    def __init__(self, folder: Path) -> None:
        self.socket = str(folder / "tmux.sock")

    def __call__(self, *args: str) -> str:
        res = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=20
        )
        return res.stdout

    def wait(self, needle: str, timeout: float = 30) -> str:
        """The pane's text once ``needle`` is on it (fails after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while needle not in (screen := self("capture-pane", "-p")):
            assert time.monotonic() < deadline, f"{needle!r} not on screen:\n{screen}"
            time.sleep(0.2)
        return screen

    def kill(self) -> None:
        self("kill-server")
