"""The app against this machine: the real probe, real run control, a real tiny job.

The job is a shell loop printing step lines (what the pipeline prints), launched under a
temporary run root. Every test kills what it launched through run control afterwards.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import live_group, open_kill_process_dialog, until
from textual.pilot import Pilot
from textual.widgets import Static

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.keys.footer import KeyFooter
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
JOB = (
    'i=0; while :; do i=$((i+1)); echo "step=$i loss=2.$i acc=0.4 tok/s=28$i"; '
    'echo "noise $i"; sleep 0.1; done'
)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"))
    yield h
    transport = make_transport(h)  # whatever a test left alive goes, through control
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


def live(host: HostConfig, **kw: object) -> DflashApp:
    return DflashApp(Config(hosts=(host,), interval=0.5, **kw))  # type: ignore[arg-type]


def state(app: DflashApp) -> str:
    return app.current.last.diagnosis.run_state if app.current.last else "?"


async def launch(pilot: Pilot, app: DflashApp) -> set[str]:
    """Press l; returns the run states seen until it runs and log lines arrive."""
    await until(pilot, lambda: app.samples >= 1)
    seen: set[str] = set()

    def running_with_lines() -> bool:
        seen.add(state(app))
        tails = list(app.screen.query(LogTail))
        return state(app) == "running" and any(t.data.store.received > 3 for t in tails)

    await pilot.press("l")
    await until(pilot, running_with_lines)
    # The launch action ends after its start window; a key pressed before is refused.
    await until(pilot, lambda: not app.control.waits_active())
    return seen


async def test_launch_key_shows_starting_and_lines_arriving(host: HostConfig) -> None:
    app = live(host)
    async with app.run_test(size=SIZE) as pilot:
        seen = await launch(pilot, app)
        assert "starting" in seen  # the start window was shown as such
        tail = app.screen.query_one(LogTail)
        assert tail.data.is_run_log and tail.data.path.startswith(host.run_root)
        await pilot.pause(0.2)
        drawn = list(tail.log_view.lines)
        assert drawn and all(x.startswith("step=") for x in drawn)  # the default filter
        assert app.current.tracker.progress.last_step and app.current.tracker.progress.last.tok_s  # type: ignore[union-attr]
        header = str(app.screen.query_one(RunHeader).render())
        assert "RUNNING" in header and app.current.last.diagnosis.run.id in header  # type: ignore[union-attr]


async def test_kill_confirms_pids_then_shows_killed(host: HostConfig) -> None:
    app = live(host)
    async with app.run_test(size=SIZE) as pilot:
        await launch(pilot, app)
        snap, diag = app.current.last.snapshot, app.current.last.diagnosis  # type: ignore[union-attr]
        members = group_members(diag.run, snap.procs)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#confirm-body").render())
        assert f"process group {diag.run.pgid}" in body  # type: ignore[union-attr]
        # The dialog lists what control.sh sees when k is pressed: the job's `sleep 0.1`
        # children of the sample may be gone by then; every lasting member is named.
        lasting = [p for p in members if p.cmd != "sleep 0.1"]
        assert lasting and all(str(p.pid) in body for p in lasting)
        assert "GPUs held: none" in body
        await pilot.press("y")
        await until(pilot, lambda: state(app) == "killed")
        assert "KILLED" in str(app.screen.query_one(RunHeader).render())
        kinds = [e.kind for e in app.current.timeline.events]
        assert "stopped" in kinds


async def test_restart_gives_a_new_run_id(host: HostConfig) -> None:
    app = live(host)
    async with app.run_test(size=SIZE) as pilot:
        await launch(pilot, app)
        old = app.current.last.diagnosis.run.id  # type: ignore[union-attr]
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")

        def new_run_alive() -> bool:
            run = app.current.last.diagnosis.run if app.current.last else None
            return run is not None and run.id != old and state(app) == "running"

        await until(pilot, new_run_alive, timeout=30)
        assert "restarted" in [e.kind for e in app.current.timeline.events]


async def test_quit_leaves_the_job_running_and_its_kill_command_works_as_printed(
    host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As started by `python3 tasks.py demo`: the venv's script, which is not on PATH.
    monkeypatch.setattr(sys, "argv", [str(Path(sys.executable).parent / "dflash-tui")])
    app = live(host)
    async with app.run_test(size=SIZE) as pilot:
        await launch(pilot, app)
        pgid = app.current.last.diagnosis.run.pgid  # type: ignore[union-attr]
        await pilot.press("q")
        await asyncio.sleep(0.2)
    assert pgid is not None
    os.killpg(pgid, 0)  # raises if the group is gone: the job survived the app
    note = app.quit_note()
    assert "keeps running" in note
    kill = re.search(r"Stop it with `([^`]+)`", note)
    assert kill is not None, note
    # Pasted into a shell elsewhere, with a bare PATH: it finds the run and stops it.
    res = subprocess.run(
        ["sh", "-c", kill.group(1)],
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stopped" in res.stdout and not live_group(pgid), res.stdout


async def test_seed_incident_with_fake_nvidia_smi(fake_smi: object, tmp_path: Path) -> None:
    log = str(tmp_path / "train_stdout_flex6.log")  # never created
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"), logs=(log,))
    app = live(h)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 3)
        await pilot.pause(0.1)
        grid = app.screen.query_one(GpuGrid)
        codes = {i: p.view.codes for i, p in grid.panels.items() if p.view}
        assert sorted(i for i, c in codes.items() if "busy-no-memory" in c) == [2, 3, 7]
        assert sorted(i for i, c in codes.items() if c == ("idle",)) == [0, 1, 4, 5, 6]
        tail = app.screen.query_one(LogTail)
        assert tail.data.path == log and tail.has_class("-missing")
        assert "does not exist (missing for" in str(tail.missing_bar.render())
        shown = str(app.screen.query_one("#findings .body").render())
        assert "log-missing" in shown and "does not exist" in shown
        assert "busy-no-memory" in shown and "GPUs 2, 3, 7" in shown


async def test_kill_selected_process_confirms_identity(host: HostConfig) -> None:
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    app = live(host)
    try:
        async with app.run_test(size=SIZE) as pilot:
            body = await open_kill_process_dialog(pilot, app, victim.pid)
            under = app.screen_stack[-2]  # the main screen, under the dialog
            info = under.query_one(ProcTree).nodes[victim.pid].data
            assert info is not None and f"SIGTERM to PID {victim.pid}" in body
            assert f"start time {info.start_ticks} ticks" in body and "sleep 300" in body
            await pilot.press("y")
            await until(pilot, lambda: victim.poll() is not None)
            assert victim.returncode == -signal.SIGTERM
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()


async def test_kill_grace_shows_progress_and_can_be_cancelled(tmp_path: Path) -> None:
    # A job that ignores SIGTERM: the kill waits out its grace period, which esc cancels.
    stubborn = "trap '' TERM; i=0; while :; do i=$((i+1)); echo step=$i; sleep 0.1; done"
    h = HostConfig(command=stubborn, run_root=str(tmp_path / "runs"))
    app = live(h)
    app.current.bridge.grace = 30.0
    try:
        async with app.run_test(size=SIZE) as pilot:
            await launch(pilot, app)
            await pilot.press("k")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await until(pilot, lambda: any("remain" in s for s in app.control.steps))
            wait = app.screen.query_one(WaitBar)
            assert wait.active
            await pilot.pause(0.2)
            # On screen, above the keys (both are docked to the bottom edge): what is at the
            # bar's row is the bar, and it says what it waits for.
            footer = app.screen.query_one(KeyFooter)
            assert wait.region.height == 1 and wait.region.bottom <= footer.region.y
            shown, _ = app.screen.get_widget_at(2, wait.region.y)
            assert shown is wait or wait in shown.ancestors
            assert "remain" in str(wait.query_one("#wait-text", Static).render())
            await pilot.press("escape")
            await until(pilot, lambda: not app.control.waits_active(), timeout=10)
            assert not app.screen.query_one(WaitBar).active
            texts = [str(n.message) for n in app._notifications]
            assert any("cancelled" in t for t in texts)
            await pilot.pause(1.0)
            assert state(app) == "running"  # SIGTERM was ignored and SIGKILL never sent
    finally:
        transport = make_transport(h)
        try:
            await control_kill.kill_latest(transport, h, grace=1.0, check_gpu=False)
        finally:
            await transport.close()
