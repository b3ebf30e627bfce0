"""Quitting while a control command runs on this machine: the action is cancelled (its next
steps are not sent), and the command of it then running, which control's scripts need to end
whole, is waited for before the app leaves (its output comes to the app, and a command writing
to a closed pipe dies there), with a line on the terminal saying so. One that outlasts the wait
is named in the quit note."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import until
from textual.pilot import Pilot

from dflash_tui.app import app as app_module
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.actions import control_group
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.link.transport import LocalTransport

SIZE = (120, 40)


class Command:
    """A control worker on the host running a script that waits for a gate file (30 s at
    most) and then says it ended; what the worker saw after the command is kept."""

    def __init__(self, tmp_path: Path) -> None:
        self.pidfile, self.gate, self.after = (
            tmp_path / "pid",
            tmp_path / "gate",
            tmp_path / "after",
        )
        self.seen: list[str] = []

    async def start(self, app: DflashApp, pilot: Pilot[None]) -> int:
        """Started, and its session once its script runs."""
        script = (
            f"echo $$ > {self.pidfile}\ni=0\n"
            f"while [ ! -e {self.gate} ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"
            f"echo done\ntouch {self.after}\n"
        )

        async def job() -> None:
            res = await LocalTransport().run("sh -s", stdin=script.encode(), timeout=60)
            self.seen.append(res.stdout)  # a next step: never reached once cancelled

        app.run_worker(job(), group=control_group(app.host_states[0]), exit_on_error=False)
        await until(pilot, self.started)
        return self.session()

    def started(self) -> bool:
        return self.pidfile.exists() and self.pidfile.read_text().strip() != ""

    def session(self) -> int:
        """The command's own sh, the session's leader (it runs the script's sh -s)."""
        return os.getpgid(int(self.pidfile.read_text()))


@contextlib.contextmanager
def ended(command: Command) -> Iterator[None]:
    """Whatever the test's outcome, the script is let go and its session killed."""
    try:
        yield
    finally:
        command.gate.touch()
        if command.started():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command.session(), signal.SIGKILL)


async def test_quitting_waits_for_a_control_command_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = Command(tmp_path)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with ended(command):
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
    with ended(command):
        async with app.run_test(size=SIZE) as pilot:
            session = await command.start(app, pilot)
        assert app.unfinished == [session]
        note = app.quit_note()
        assert f"(session {session}) did not end by itself" in note, note
        assert f"`ps -s {session}`" in note
        assert not command.after.exists() and command.seen == []


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
