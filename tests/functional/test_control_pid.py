"""Killing one process from the tree: verified by start time, escalates, never by name."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from dflash_tui.core.control.pid import kill_process
from dflash_tui.core.control.script import SCRIPT_PATH
from dflash_tui.core.link.transport import LocalTransport


def ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


async def test_term_ignored_then_killed() -> None:
    p = subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    try:
        res = await kill_process(LocalTransport(), pid=p.pid, start_ticks=ticks(p.pid), grace=0.5)
        assert res.ok and res.signals == ("TERM", "KILL")
        assert p.wait(5) == -9
    finally:
        p.kill()
        p.wait()


async def test_reused_pid_is_not_signalled() -> None:
    p = subprocess.Popen(["sleep", "30"])
    try:
        res = await kill_process(LocalTransport(), pid=p.pid, start_ticks=ticks(p.pid) + 1)
        assert res.refused and not res.ok and res.signals == ()
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


async def test_gone_process() -> None:
    p = subprocess.Popen(["true"])
    t = ticks(p.pid) if Path(f"/proc/{p.pid}").exists() else 1
    p.wait()
    res = await kill_process(LocalTransport(), pid=p.pid, start_ticks=t)
    assert res.ok and "gone" in res.message


async def test_menu_signals_int_once_and_usr1_without_waiting(tmp_path: Path) -> None:
    """INT is sent once and waited for, never escalated; USR1 is sent, not waited for."""
    marker = tmp_path / "got"
    ready = tmp_path / "ready"
    script = f'trap "echo int >> {marker}" INT; trap "echo usr1 >> {marker}" USR1; '
    script += f": > {ready}; "
    # SIGINT at its default: a shell cannot trap a signal ignored when it started, and a
    # test run launched in the background by a non-interactive shell ignores SIGINT.
    p = subprocess.Popen(
        ["sh", "-c", script + "while :; do sleep 0.05; done"],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for _ in range(200):  # the traps are set (a signal before them would kill the shell)
            if ready.exists():
                break
            time.sleep(0.02)
        t = LocalTransport()
        res = await kill_process(t, pid=p.pid, start_ticks=ticks(p.pid), grace=0.5, signal="INT")
        assert res.ok and res.signals == ("INT",) and "still runs" in res.message, res
        res = await kill_process(t, pid=p.pid, start_ticks=ticks(p.pid), signal="USR1")
        assert res.ok and res.signals == ("USR1",) and res.message == f"SIGUSR1 sent to PID {p.pid}"
        for _ in range(100):
            if marker.exists() and marker.read_text().split() == ["int", "usr1"]:
                break
            time.sleep(0.05)
        assert marker.read_text().split() == ["int", "usr1"]
        assert p.poll() is None
        res = await kill_process(t, pid=p.pid, start_ticks=ticks(p.pid), signal="KILL")
        assert res.ok and res.signals == ("KILL",) and p.wait(5) == -9
    finally:
        p.kill()
        p.wait()


async def test_control_sh_takes_no_other_signal() -> None:
    p = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(ValueError, match="not one of TERM, INT, KILL, USR1"):
            await kill_process(LocalTransport(), pid=p.pid, start_ticks=ticks(p.pid), signal="HUP")
        # control.sh itself refuses it too, whoever calls it
        res = subprocess.run(
            ["sh", "-s", "--", "pid", str(p.pid), str(ticks(p.pid)), "HUP"],
            stdin=SCRIPT_PATH.open("rb"),
            capture_output=True,
            text=True,
        )
        assert res.stdout.splitlines() == ["error bad signal HUP", "end"]
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
