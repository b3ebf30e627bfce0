"""The local transport never leaves a process behind: a cancelled stream or a timed-out run ends
its whole session; a cancelled run runs on to its end, held to its timeout."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gated import gated_head
from support import live_group

from dflash_tui.core.link.transport import (
    CommandResult,
    LocalTransport,
    TransportError,
    cut_off_here,
    finish_pending,
    finishing,
)


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


async def _wait_for(cond: Callable[[], bool], seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / 0.02)):
        if cond():
            return True
        await asyncio.sleep(0.02)
    return cond()


async def _cancel_once_started(task: asyncio.Task[CommandResult], pidfile: Path) -> int:
    assert await _wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    pid = int(pidfile.read_text())
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return pid


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    """The gate file, opened whatever the test's outcome."""
    path = tmp_path / "gate"
    yield path
    path.touch()


async def test_a_cancelled_run_runs_on_to_its_end_and_is_reaped(tmp_path: Path, gate: Path) -> None:
    """esc on a control action, or the app quitting, cancels its ``run``: the script (fed on
    stdin, as control's are) runs on to its end, since a control script killed at any line
    could leave a lock, a run directory or a Slurm submission half made. sh is reaped, and
    the wait for such commands says it ended by itself."""
    pidfile, after = tmp_path / "pid", tmp_path / "after"
    script = gated_head(pidfile, gate) + f"touch {after}\n"
    task = asyncio.create_task(LocalTransport().run("sh -s", stdin=script.encode(), timeout=60))
    sh = await _cancel_once_started(task, pidfile)
    command = os.getpgid(sh)
    assert finishing() == [command]
    gate.touch()
    assert await finish_pending(20) == []
    assert after.exists()
    assert await _wait_for(lambda: not Path(f"/proc/{sh}").exists())  # exited and reaped
    assert finishing() == []


async def test_a_script_still_being_sent_at_the_cancel_arrives_whole(
    tmp_path: Path, gate: Path
) -> None:
    """A cancel while the script is still being written to sh's stdin (it is over the
    pipe's 64 KiB, and sh reads on only once the gate is there): the rest is sent, then EOF,
    so sh runs the whole script, not a cut one, and ends."""
    pidfile, after = tmp_path / "pid", tmp_path / "after"
    pad = "".join(f": {'x' * 70}\n" for _ in range(3000))  # about 220 KiB of no-ops
    script = (gated_head(pidfile, gate) + pad + f"touch {after}\n").encode()
    task = asyncio.create_task(LocalTransport().run("sh -s", stdin=script, timeout=60))
    sh = await _cancel_once_started(task, pidfile)
    gate.touch()
    assert await _wait_for(after.exists, 20)
    assert await _wait_for(lambda: not Path(f"/proc/{sh}").exists())


async def test_a_cancelled_run_is_still_held_to_its_timeout(tmp_path: Path) -> None:
    """What runs on after its caller left still ends at its own timeout, its whole session
    killed (sh and the children under it); the wait for such commands names it as one that
    did not end by itself."""
    pidfile, after = tmp_path / "pid", tmp_path / "after"
    cmd = f"echo $$ > {pidfile}; sh -c 'sleep 60'; touch {after}"
    task = asyncio.create_task(LocalTransport().run(cmd, timeout=5.0))
    group = await _cancel_once_started(task, pidfile)
    assert live_group(group)  # runs on past the cancel
    assert await finish_pending(30) == [group]  # killed at its deadline, within the wait
    assert await _wait_for(lambda: not live_group(group), 30)
    assert not after.exists()


async def test_the_commands_cut_off_in_a_block_are_its_own(tmp_path: Path, gate: Path) -> None:
    """``cut_off_here`` finds a command cut off in its block, also one run in a task started
    there (it inherits the block's context), and not one cut off outside the block; each says
    when it is over, and why it was killed."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    outside = asyncio.create_task(
        LocalTransport().run("sh -s", stdin=gated_head(other, gate).encode(), timeout=60)
    )
    with cut_off_here() as cut:
        # Its own gate, never opened: killed at its deadline (and done polling within 30 s).
        script = gated_head(mine, tmp_path / "never").encode()
        inner = asyncio.create_task(LocalTransport().run("sh -s", stdin=script, timeout=3))
        sh = await _cancel_once_started(inner, mine)
    await _cancel_once_started(outside, other)
    assert len(finishing()) == 2
    assert [c.session for c in cut] == [os.getpgid(sh)]
    (command,) = cut
    assert command.running and command.killed is None and not command.wrapped
    over: list[object] = []
    command.when_over(over.append)
    gate.touch()  # the other one ends by itself
    assert await finish_pending(30) == [command.session]  # killed at its deadline
    await asyncio.sleep(0)  # the done-callbacks run
    assert over == [command]
    assert not command.running and command.killed == "it ran past its deadline"


async def test_a_command_run_through_a_client_is_cut_off_as_such(
    tmp_path: Path, gate: Path
) -> None:
    """Through a container's exec or srun (a wrapped transport) the kill reaches the client's
    session: the cut-off command says so."""
    pidfile = tmp_path / "pid"
    with cut_off_here() as cut:
        run = LocalTransport(lambda cmd: cmd).run("sh -s", stdin=gated_head(pidfile, gate).encode())
        await _cancel_once_started(asyncio.create_task(run), pidfile)
    gate.touch()
    assert [c.wrapped for c in cut] == [True]
    assert await finish_pending(20) == [] and cut[0].killed is None


async def test_run_passes_stdin_and_rc() -> None:
    res = await LocalTransport().run("cat; exit 3", stdin=b"hello")
    assert (res.rc, res.stdout) == (3, "hello")
