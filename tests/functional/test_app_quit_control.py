"""Quitting while a control command runs on this machine: the action is cancelled (its next
steps are not sent), and the command of it then running, which control's scripts need to end
whole, is waited for before the app leaves (its output comes to the app, and a command writing
to a closed pipe dies there). One that outlasts the wait is named in the quit note."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from support import until

from dflash_tui.app import app as app_module
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.actions import control_group
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.link.transport import LocalTransport

SIZE = (120, 40)


def start_command(app: DflashApp, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A control worker on the host running a script that waits for a gate file, then says
    where it is; what the worker saw after the command is kept."""
    pidfile, gate, after = tmp_path / "pid", tmp_path / "gate", tmp_path / "after"
    script = f"echo $$ > {pidfile}\nwhile [ ! -e {gate} ]; do sleep 0.02; done\necho done\n"
    script += f"touch {after}\n"
    seen: list[str] = []

    async def job() -> None:
        res = await LocalTransport().run("sh -s", stdin=script.encode(), timeout=60)
        seen.append(res.stdout)  # a next step: never reached once cancelled

    state = app.host_states[0]
    app.run_worker(job(), group=control_group(state), exit_on_error=False)
    return pidfile, gate, seen


async def test_quitting_waits_for_a_control_command_to_end(tmp_path: Path) -> None:
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    async with app.run_test(size=SIZE) as pilot:
        pidfile, gate, seen = start_command(app, tmp_path)
        await until(pilot, lambda: pidfile.exists() and pidfile.read_text().strip() != "")
        asyncio.get_running_loop().call_later(1.0, gate.touch)  # ends after the quit began
        t0 = time.monotonic()
    assert (tmp_path / "after").exists()  # the script ended before the app did
    assert time.monotonic() - t0 >= 0.9
    assert seen == []  # the action's next step was not taken
    assert app.unfinished == [] and "control command" not in app.quit_note()


async def test_a_command_that_outlasts_the_wait_is_named_at_quit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "QUIT_FINISH_S", 0.5)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    async with app.run_test(size=SIZE) as pilot:
        pidfile, _gate, seen = start_command(app, tmp_path)
        await until(pilot, lambda: pidfile.exists() and pidfile.read_text().strip() != "")
        # The command's own sh (the group's leader) runs the script's sh -s.
        command = os.getpgid(int(pidfile.read_text()))
    try:
        assert app.unfinished == [command]
        note = app.quit_note()
        assert f"control command (PID {command}) still ran" in note, note
        assert not (tmp_path / "after").exists() and seen == []
    finally:
        os.killpg(command, signal.SIGKILL)
