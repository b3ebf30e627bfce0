"""Killing one process from the tree: verified by start time, escalates, never by name."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dflash_tui.core.control.pid import kill_process
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
