"""Quitting while a control command runs on this machine: the action is cancelled (its next
steps are not sent), and the command of it then running, which control's scripts need to end
whole, is waited for before the app leaves (its output comes to the app, and a command writing
to a closed pipe dies there), with a line on the terminal saying so. One that outlasts the wait
is named in the quit note."""

from __future__ import annotations

import asyncio
import time
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
from dflash_tui.core.link.transport import LocalTransport, finish_pending

SIZE = (120, 40)


class Command(Gated):
    """A control worker on the host running the gated script, which then says it ended; what
    the worker saw after the command is kept. With ``cleanup``, the worker's ``finally`` runs
    one more command (as a launch gives its lock back) that takes that long and then says so."""

    def __init__(self, tmp_path: Path, cleanup: float | None = None) -> None:
        super().__init__(tmp_path)
        self.given = tmp_path / "given"
        self.cleanup = cleanup
        self.seen: list[str] = []

    async def start(self, app: DflashApp, pilot: Pilot[None]) -> int:
        """Started, and its session once its script runs."""

        async def job() -> None:
            try:
                res = await LocalTransport().run(
                    "sh -s", stdin=self.script("echo done"), timeout=60
                )
                self.seen.append(res.stdout)  # a next step: never reached once cancelled
            finally:
                if self.cleanup is not None:
                    await LocalTransport().run(f"sleep {self.cleanup}; touch {self.given}")

        app.run_worker(job(), group=control_group(app.host_states[0]), exit_on_error=False)
        await until(pilot, self.started)
        return self.session()


async def test_quitting_waits_for_a_control_command_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = Command(tmp_path)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with let_go(command):
        async with app.run_test(size=SIZE) as pilot:
            session = await command.start(app, pilot)
            asyncio.get_running_loop().call_later(1.0, command.gate.touch)  # after the quit
            t0 = time.monotonic()
            await pilot.press("q")
        assert command.after.exists()  # the script ended before the app did
        assert time.monotonic() - t0 >= 0.9
        assert command.seen == []  # the action's next step was not taken
        assert app.unfinished == [] and "did not end" not in app.quit_note()
        err = capsys.readouterr().err
        assert (
            f"waiting up to 10 s for the commands it started on this machine to end (PID {session})"
            in err
        )


async def test_a_command_that_outlasts_the_wait_is_named_at_quit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "QUIT_FINISH_S", 0.5)
    command = Command(tmp_path)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with let_go(command):
        async with app.run_test(size=SIZE) as pilot:
            session = await command.start(app, pilot)
        assert app.unfinished == [session]
        note = app.quit_note()
        assert f"(session {session}) did not end by itself" in note, note
        assert f"`ps -s {session}`" in note
        assert not command.after.exists() and command.seen == []
    await finish_pending(10)  # killed above: its finishing task sees it end on this loop


async def test_quitting_waits_for_a_cancelled_actions_cleanup(tmp_path: Path) -> None:
    """Textual cancels the workers before the app's unmount: an action cancelled so may still
    be cleaning up (a command in its ``finally``), and the quit waits for that too."""
    command = Command(tmp_path, cleanup=1.0)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with let_go(command):
        async with app.run_test(size=SIZE) as pilot:
            await command.start(app, pilot)
            asyncio.get_running_loop().call_later(0.3, command.gate.touch)
            await pilot.press("q")
        assert command.given.exists()  # the cleanup's command ended before the app did
        assert command.after.exists() and command.seen == []
        assert app.unfinished == []
    await finish_pending(10)


async def test_a_quit_with_no_command_running_does_not_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        t0 = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - t0 < 5 and app.unfinished == []
    assert "waiting up to" not in capsys.readouterr().err
