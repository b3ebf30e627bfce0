"""A command on this machine that waits for a gate file, for the tests of what a cancel or a
quit does to a command still running (tests/functional/test_app_quit_control.py,
test_app_cancel_control.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from dflash_tui.core.base.local_proc import alive, start_ticks


def gated_head(pidfile: Path, gate: Path) -> str:
    """A script's head: its sh's PID, then a wait for the gate file (30 s at most, so a test
    that fails before opening it leaves nothing polling)."""
    return (
        f"echo $$ > {pidfile}\ni=0\n"
        f"while [ ! -e {gate} ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"
    )


class Gated:
    """A script that writes its PID, waits for ``gate`` (30 s at most: never forever), then
    touches ``after``; ``sid`` is its session once it runs (its ``sh`` leads it)."""

    def __init__(self, tmp_path: Path) -> None:
        self.pidfile, self.gate = tmp_path / "pid", tmp_path / "gate"
        self.after = tmp_path / "after"
        self.sid: int | None = None
        self.ticks: int | None = None  # its leader's start: the same process, not its PID's next

    def script(self, last: str = "") -> bytes:
        """For ``sh -s``; ``last``: a line it runs once the gate opened (before ``after``)."""
        return (gated_head(self.pidfile, self.gate) + f"{last}\ntouch {self.after}\n").encode()

    def started(self) -> bool:
        return self.pidfile.exists() and self.pidfile.read_text().strip() != ""

    def session(self) -> int:
        """Its session, read once it started."""
        self.sid = os.getpgid(int(self.pidfile.read_text()))
        self.ticks = start_ticks(self.sid)
        return self.sid


@contextlib.contextmanager
def let_go(command: Gated) -> Iterator[None]:
    """Whatever the test's outcome, the script is let go and its session killed, unless it
    ended or was killed already (its PID may be another's by then)."""
    try:
        yield
    finally:
        command.gate.touch()
        sid = command.sid
        if sid is not None and not command.after.exists() and alive(sid, command.ticks):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sid, signal.SIGKILL)
