"""esc on a control action whose command runs on this machine: the action is cancelled (its
next steps are not sent) and says which command of it runs on (control's scripts end whole);
that command is held to its deadline, and one killed there is said while the app runs, since
it may have stopped part-way through its script. One that ends by itself says nothing more."""

from __future__ import annotations

from pathlib import Path

from gated import Gated, let_go
from support import until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.actions import cancelled_text
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.link.transport import LocalTransport, finish_pending, finishing

SIZE = (120, 40)
# The command's timeout: past the 5 s after which esc cancels an action that did not stop at
# control's cancel event (this one has none), so it is cut off first, then killed here.
DEADLINE = 8.0


class Launch(Gated):
    """A launch whose command is the gated script; whether its next step ran is kept."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.next_step = False

    async def job(self, _step: object) -> str:
        await LocalTransport().run("sh -s", stdin=self.script(), timeout=DEADLINE)
        self.next_step = True  # never reached once cancelled
        return "launched"


def said(app: DflashApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def cancel_launch(app: DflashApp, pilot: Pilot[None], command: Launch) -> int:
    """The launch started, its command running, then esc: the command's session."""
    app.control._start(app.host_states[0], "launch", command.job, "launching …")
    await until(pilot, command.started)
    sid = command.session()
    await pilot.press("escape")
    await until(pilot, lambda: not app.control.waits_active(), timeout=10)
    return sid


async def test_a_cut_off_command_killed_at_its_deadline_is_said(tmp_path: Path) -> None:
    command = Launch(tmp_path)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with let_go(command):
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            sid = await cancel_launch(app, pilot, command)
            assert cancelled_text("launch", [sid]) in said(app)
            assert f"(session {sid}) runs on to its end, held to its deadline" in said(app)[-1]
            assert app.control.cut_off == {sid} and sid in finishing()
            killed = f"(session {sid}) ran past its deadline and was killed"
            await until(pilot, lambda: any(killed in t for t in said(app)), timeout=DEADLINE + 10)
            assert app.control.cut_off == set() and sid not in finishing()
            assert not command.after.exists() and not command.next_step


async def test_a_cut_off_command_that_ends_by_itself_says_nothing_more(tmp_path: Path) -> None:
    command = Launch(tmp_path)
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([]))
    with let_go(command):
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            sid = await cancel_launch(app, pilot, command)
            assert app.control.cut_off == {sid}
            command.gate.touch()
            await until(pilot, lambda: sid not in finishing(), timeout=10)
            await pilot.pause(0.2)
            assert command.after.exists() and not command.next_step  # it ended whole
            assert app.control.cut_off == set()
            assert not any("ran past its deadline" in t for t in said(app))
    await finish_pending(10)


def test_a_cancel_that_cut_nothing_off_says_only_that() -> None:
    assert cancelled_text("kill", []) == "kill cancelled; nothing more is sent"
    assert "(sessions 11, 12) runs on" in cancelled_text("kill", [11, 12])
