"""`K`'s process menu on real processes, the real probe and the real control: USR1 to a child
that traps it (it writes a file and keeps running), KILL to another (it dies of SIGKILL, not
SIGTERM), `py-spy dump` offered only where py-spy is on PATH, and then a real dump of a real
Python process; a process control refuses still gets no menu."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import open_kill_process_dialog, pick_signal, until
from textual.widgets import Static

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.control.signals import SignalMenu
from dflash_tui.core.base.config_types import Config, HostConfig

SIZE = (120, 40)
PY_SPY = Path(sys.executable).parent / "py-spy"  # the test extra installs it (pyproject)
MARKED = (  # a Python process whose stack names a function of ours
    "def dflash_marker_fn():\n import time\n while True: time.sleep(0.05)\ndflash_marker_fn()\n"
)


def live(tmp_path: Path) -> DflashApp:
    return DflashApp(Config(hosts=(HostConfig(run_root=str(tmp_path / "runs")),), interval=0.5))


def path_without_py_spy(tmp_path: Path) -> str:
    """PATH as it is, less every folder that holds a py-spy; plus a folder of our own."""
    own = tmp_path / "bin"
    own.mkdir(exist_ok=True)
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return os.pathsep.join([str(own), *(d for d in dirs if not (Path(d) / "py-spy").exists())])


async def confirm_body(app: DflashApp) -> tuple[str, str]:
    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    return screen.title_text, str(screen.query_one("#confirm-body", Static).render())


async def test_usr1_reaches_a_trapping_child_and_kill_kills_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_py_spy(tmp_path))
    marker = tmp_path / "usr1.txt"
    trap = f'trap "echo got-usr1 >> {marker}" USR1; while :; do sleep 0.05; done'
    trapper = subprocess.Popen(["sh", "-c", trap], start_new_session=True)
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        app = live(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            body = await open_kill_process_dialog(pilot, app, trapper.pid, "USR1")
            title, _ = await confirm_body(app)
            assert f"SIGUSR1 to PID {trapper.pid}" in body and str(trapper.pid) in title, body
            assert "SIGUSR1" in title and "start time" in body
            await pilot.press("y")
            await until(pilot, lambda: marker.exists() and "got-usr1" in marker.read_text())
            await until(pilot, lambda: not app.control.waits_active())
            time.sleep(0.3)
            assert trapper.poll() is None  # it handled the signal and runs on

            body = await open_kill_process_dialog(pilot, app, victim.pid, "KILL")
            title, _ = await confirm_body(app)
            assert f"SIGKILL to PID {victim.pid}" in body and "SIGKILL" in title, body
            await pilot.press("y")
            await until(pilot, lambda: victim.poll() is not None, timeout=30)
        assert victim.returncode == -9  # SIGKILL, not the TERM K sent before the menu
        assert marker.read_text().count("got-usr1") == 1
    finally:
        for p in (trapper, victim):
            if p.poll() is None:
                p.kill()
            p.wait()


async def test_menu_lists_the_signals_and_no_dump_without_py_spy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_py_spy(tmp_path))
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        app = live(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await open_kill_process_dialog(pilot, app, child.pid, "TERM")
            await pilot.press("n")
            await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
            await pilot.press("K")
            ids = await pick_signal(pilot, app, None)
            assert ids == ["TERM", "INT", "KILL", "USR1"]
            await until(pilot, lambda: not isinstance(app.screen, SignalMenu))
            await pilot.pause(0.3)
        assert child.poll() is None  # esc and n sent nothing
    finally:
        child.kill()
        child.wait()


async def test_py_spy_on_path_offers_a_real_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not PY_SPY.exists():
        if os.environ.get("CI"):
            pytest.fail("py-spy must be installed (the test extra)", pytrace=False)
        pytest.skip("py-spy is not installed beside this python (pip install py-spy)")
    path = path_without_py_spy(tmp_path)
    (tmp_path / "bin" / "py-spy").symlink_to(PY_SPY)  # on PATH for control.sh's command -v
    monkeypatch.setenv("PATH", path)
    target = subprocess.Popen([sys.executable, "-c", MARKED], start_new_session=True)
    try:
        app = live(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            body = await open_kill_process_dialog(pilot, app, target.pid, "py-spy")
            title, _ = await confirm_body(app)
            assert f"py-spy dump of PID {target.pid}" in body and "nothing is signalled" in body
            assert "py-spy dump" in title
            await pilot.press("y")

            def dump_shown() -> bool:
                screen = app.screen
                return (
                    isinstance(screen, ConfirmScreen)
                    and "on local" in screen.title_text
                    and (screen.title_text.startswith("py-spy dump of PID"))
                )

            await until(pilot, dump_shown, timeout=60)
            _, text = await confirm_body(app)
            assert f"Thread {target.pid}" in text, text
            assert "dflash_marker_fn (<string>:3)" in text, text  # its stack, not its argv
            assert not app.screen.query("#yes")  # a dump to read, nothing to confirm
        assert target.poll() is None  # dumped, never signalled
    finally:
        target.kill()
        target.wait()


async def test_pid_1_gets_no_menu(tmp_path: Path) -> None:
    app = live(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        body = await open_kill_process_dialog(pilot, app, 1, "TERM")
        assert "PID 1 is init" in body
        assert not app.screen.query("#yes")
