"""esc on a control action whose command runs on this machine: the action is cancelled (its
next steps are not sent) and says which command of it runs on (control's scripts end whole);
that command is held to its deadline, and one killed there is said while the app runs, since
it may have stopped part-way through its script: also one killed while the action's cleanup
ran. One that ends by itself says nothing more, another worker's command is not named as the
action's, and after the quit the quit note names what was killed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gated import Gated, let_go
from support import until
from textual.pilot import Pilot

from dflash_tui.app import app as app_module
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.actions import control_group
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.link.transport import CutOff, LocalTransport, finish_pending, finishing

SIZE = (120, 40)
# esc cancels an action that has not stopped at control's cancel event (these have none) 5 s
# later: a command's deadline past that, with room for a loaded machine, cuts it off first.
ESC_DEADLINE = 12.0
DEADLINE = 3.0  # a command cut off at once, without esc
KILLED = "ran past its deadline; its session was killed"


class Launch(Gated):
    """A launch whose command is the gated script; whether its next step ran is kept. With
    ``cleanup``, its ``finally`` runs a command that long (as a launch gives its lock back)."""

    def __init__(self, tmp_path: Path, deadline: float, cleanup: float | None = None) -> None:
        super().__init__(tmp_path)
        self.deadline, self.cleanup = deadline, cleanup
        self.next_step = False

    async def job(self, _step: object) -> str:
        try:
            await LocalTransport().run("sh -s", stdin=self.script(), timeout=self.deadline)
            self.next_step = True  # never reached once cancelled
        finally:
            if self.cleanup is not None:
                await LocalTransport().run(f"sleep {self.cleanup}")
        return "launched"


def said(app: DflashApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def cancelled(app: DflashApp) -> str:
    (text,) = [t for t in said(app) if "launch cancelled" in t]
    return text


async def start(app: DflashApp, pilot: Pilot[None], command: Launch) -> int:
    """The launch started, and its command's session once its script runs."""
    app.control._start(app.host_states[0], "launch", command.job, "launching …")
    await until(pilot, command.started)
    return command.session()


async def cancel_now(app: DflashApp, pilot: Pilot[None]) -> None:
    """What esc does 5 s later to an action whose job runs: its worker cancelled."""
    group = control_group(app.host_states[0])
    for w in app.workers:
        if w.group == group:
            w.cancel()
    await until(pilot, lambda: not app.control.waits_active(), timeout=10)


async def cut_off(app: DflashApp, pilot: Pilot[None], command: Launch) -> int:
    """The launch started, then cancelled while its command runs: that command's session,
    which the cancelled notice names as running on."""
    sid = await start(app, pilot, command)
    await cancel_now(app, pilot)
    assert f"(session {sid}) runs on" in cancelled(app)
    return sid


def app_of_one_host() -> DflashApp:
    return DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))


@contextlib.asynccontextmanager
async def watching(command: Gated) -> AsyncIterator[tuple[DflashApp, Pilot[None]]]:
    """The app of this machine, running with notices kept; ``command`` let go at the end
    (tests/gated.py ``let_go``), after the app has quit."""
    app = app_of_one_host()
    with let_go(command):
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            yield app, pilot


async def test_esc_names_the_cut_off_command_and_its_kill_at_the_deadline(tmp_path: Path) -> None:
    command = Launch(tmp_path, ESC_DEADLINE)
    async with watching(command) as (app, pilot):
        sid = await start(app, pilot, command)
        await pilot.press("escape")
        await until(pilot, lambda: not app.control.waits_active(), timeout=10)
        assert cancelled(app) == (
            "launch cancelled: its next steps are not sent; the command it had running on "
            f"this machine (session {sid}) runs on to its end, held to its deadline while "
            "the app runs"
        )
        assert sid in finishing()
        killed = f"(session {sid}): it {KILLED}"
        await until(pilot, lambda: any(killed in t for t in said(app)), timeout=20)
        assert sid not in finishing()
        assert not command.after.exists() and not command.next_step


async def test_a_cut_off_command_that_ends_by_itself_says_nothing_more(tmp_path: Path) -> None:
    command = Launch(tmp_path, ESC_DEADLINE)
    async with watching(command) as (app, pilot):
        sid = await cut_off(app, pilot, command)
        command.gate.touch()
        await until(pilot, lambda: sid not in finishing(), timeout=10)
        await pilot.pause(0.2)
        assert command.after.exists() and not command.next_step  # it ended whole
        assert not any(KILLED in t for t in said(app))


async def test_a_command_killed_while_the_actions_cleanup_ran_is_said(tmp_path: Path) -> None:
    """Killed at its deadline before the cancel reached the action (its ``finally`` was still
    running a command): the cancelled notice does not say it runs on, the next one says it was
    killed."""
    command = Launch(tmp_path, DEADLINE, cleanup=DEADLINE + 1)
    async with watching(command) as (app, pilot):
        sid = await start(app, pilot, command)
        await cancel_now(app, pilot)
        assert cancelled(app) == "launch cancelled: its next steps are not sent"
        await until(pilot, lambda: any(f"(session {sid}): it {KILLED}" in t for t in said(app)))
        assert not command.after.exists()


async def test_another_workers_cut_off_command_is_not_named(tmp_path: Path) -> None:
    other = Gated(tmp_path / "other")
    other.pidfile.parent.mkdir()
    async with watching(other) as (app, pilot):

        async def elsewhere() -> None:  # not an action: a refresh, an ask
            await LocalTransport().run("sh -s", stdin=other.script(), timeout=20)

        worker = app.run_worker(elsewhere(), exit_on_error=False)
        await until(pilot, other.started)
        worker.cancel()
        await until(pilot, lambda: other.session() in finishing())

        begun = asyncio.Event()

        async def waits(_step: object) -> str:  # as an action over SSH waits
            begun.set()
            await asyncio.sleep(30)
            return "done"

        app.control._start(app.host_states[0], "launch", waits, "launching …")
        await until(pilot, begun.is_set)
        await cancel_now(app, pilot)
        assert cancelled(app) == "launch cancelled: its next steps are not sent"
        other.gate.touch()  # it ends by itself: the quit does not wait for it
    await finish_pending(10)


async def test_after_the_quit_a_cut_off_command_killed_is_in_the_quit_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "QUIT_FINISH_S", DEADLINE + 10)
    command = Launch(tmp_path, DEADLINE)
    async with watching(command) as (app, pilot):
        sid = await cut_off(app, pilot, command)
        await pilot.press("q")  # the quit waits for it: killed at its deadline meanwhile
    assert app.unfinished == [sid]
    assert f"(session {sid}) did not end by itself" in app.quit_note()


async def test_a_client_killed_says_the_script_may_still_run_where_it_ran() -> None:
    """A command run through a container's exec or Slurm's srun: the kill reached the client
    on this machine only."""
    app = app_of_one_host()
    async with app.run_test(size=SIZE, notifications=True) as pilot:

        async def killed() -> str | None:  # as finish_later's task says of a killed command
            return "it ran past its deadline"

        task = asyncio.get_running_loop().create_task(killed())
        await task
        client = CutOff(4242, True, task)
        app.control._cut_off_ended(app.host_states[0].key, "launch", client)
        await pilot.pause(0.1)
        assert (
            "the command launch left running when it was cancelled (session 4242): it ran past "
            "its deadline; its client here was killed; the script may still run where the "
            "client ran it"
        ) in said(app)
