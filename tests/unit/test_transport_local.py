"""The local transport never leaves a process behind when a stream is cancelled or times out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dflash_tui.core.link.transport import LocalTransport, TransportError


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_cancelled_stream_kills_the_child_of_sh(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # sh runs a child (not exec): cancelling must end the child too, not only sh.
    cmd = f"sh -c 'echo $$ > {pidfile}; while :; do echo tick; sleep 0.05; done'; true"
    t = LocalTransport()
    agen = t.stream(cmd)
    assert await agen.__anext__() == "tick"
    child = int(pidfile.read_text())
    await agen.aclose()
    for _ in range(100):
        if not _alive(child):
            break
        await asyncio.sleep(0.02)
    assert not _alive(child)


async def test_run_timeout_kills_everything(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    t = LocalTransport()
    with pytest.raises(TransportError, match="timed out"):
        await t.run(f"sh -c 'echo $$ > {pidfile}; sleep 30'; true", timeout=0.5)
    child = int(pidfile.read_text())
    await asyncio.sleep(0.1)
    assert not _alive(child)


async def test_a_cancelled_run_ends_its_command_and_everything_under_it(tmp_path: Path) -> None:
    """esc on a control action, or the app quitting, cancels its ``run``: the command's
    session is killed and reaped then, so nothing more of it runs (the action's later steps
    are not sent) and no process outlives the loop that could reap it."""
    pidfile, after = tmp_path / "pid", tmp_path / "after"
    cmd = f"sh -c 'echo $$ > {pidfile}; sleep 30'; touch {after}"
    task = asyncio.create_task(LocalTransport().run(cmd, timeout=60.0))
    for _ in range(250):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.02)
    child = int(pidfile.read_text())
    assert _alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(250):
        if not _alive(child):
            break
        await asyncio.sleep(0.02)
    assert not _alive(child)
    await asyncio.sleep(0.2)
    assert not after.exists()  # sh did not go on to its next step


async def test_run_passes_stdin_and_rc() -> None:
    res = await LocalTransport().run("cat; exit 3", stdin=b"hello")
    assert (res.rc, res.stdout) == (3, "hello")
