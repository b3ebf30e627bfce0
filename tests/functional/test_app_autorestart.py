"""Auto-restart in the app, against real processes under a temporary run root: a crash loop
ends in FATAL after the configured retries; ``A`` toggles the supervisor; a manual kill is not
undone; read-only mode never supervises. Short timings: the supervisor polls every 0.1 s."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from support import until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.autorestart import AUTO_GROUP
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.findings.panel import TimelineList
from dflash_tui.app.host.header import RunHeader
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.control.launch import LaunchResult
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
CRASH = "echo step=1 loss=1 tok/s=1; exit 3"
LOOP = 'i=0; while :; do i=$((i+1)); echo "step=$i loss=2.$i tok/s=28$i"; sleep 0.1; done'
POLICY = RestartPolicy(enabled=True, retries=2, backoff_s=0.2, max_backoff_s=1.0)


@pytest.fixture
async def root(tmp_path: Path) -> AsyncIterator[Path]:
    yield tmp_path / "runs"
    h = HostConfig(run_root=str(tmp_path / "runs"))
    transport = make_transport(h)  # whatever a test left alive goes, through control
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


def app_for(host: HostConfig, read_only: bool = False) -> DflashApp:
    app = DflashApp(Config(hosts=(host,), interval=0.3, read_only=read_only))
    bridge = app.host_states[0].bridge
    bridge.supervise_poll, bridge.start_window = 0.1, 0.5  # the test hook: no 2 s polls
    return app


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def header(app: DflashApp) -> str:
    return str(app.screen.query_one(RunHeader).render())


def supervisors(app: DflashApp) -> int:
    return sum(1 for w in app.workers if w.group.startswith(AUTO_GROUP) and w.is_running)


def run_state(app: DflashApp) -> str:
    return app.current.last.diagnosis.run_state if app.current.last else "?"


def slow_relaunch(command: str, root: Path) -> DflashApp:
    """Auto-restart on, each relaunch waiting 3 s for its run (its start window)."""
    app = app_for(HostConfig(command=command, run_root=str(root), restart=POLICY))
    app.host_states[0].bridge.start_window = 3.0
    return app


def said(app: DflashApp) -> list[str]:
    """The timeline's relaunches, as the supervisor said them."""
    return [e.text for e in app.current.timeline.events if e.kind == "restarted"]


async def relaunching(pilot: Pilot, app: DflashApp, root: Path) -> None:
    """``l``: the run crashes and the supervisor's relaunch is under way (its run directory
    made, its start window running)."""
    await started(pilot, app)
    await pilot.press("l")
    await until(pilot, lambda: root.exists() and len(run_dirs(root)) == 2, timeout=15)


async def started(pilot: Pilot, app: DflashApp) -> None:
    await until(pilot, lambda: app.samples >= 1)


async def test_crash_loop_restarts_then_goes_fatal(root: Path) -> None:
    app = app_for(HostConfig(command=CRASH, run_root=str(root), restart=POLICY))
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        assert supervisors(app) == 1 and "auto-restart on" in header(app)
        await pilot.press("l")
        await until(pilot, lambda: app.current.auto == "fatal", timeout=15)
        events = list(app.current.timeline.events)
        assert sum(e.kind == "restarted" for e in events) == 2
        fatal = [e for e in events if e.kind == "FATAL"]
        assert len(fatal) == 1 and "exit 3" in fatal[0].text and "after 2 restarts" in fatal[0].text
        # Each relaunch died inside its start window: said as such, never as a restart that took.
        gone = [e.text for e in events if e.kind == "restarted" and e.severity == "error"]
        assert len(gone) == 2, gone
        assert all("did not last its start window: exit 3" in t for t in gone), gone
        notes = [(n.severity, str(n.message)) for n in app._notifications]
        assert sum(sev == "error" and "did not last its start" in m for sev, m in notes) == 2
        assert not any(sev == "warning" and "launched run" in m for sev, m in notes)
        assert any(sev == "error" and m.startswith("FATAL") for sev, m in notes)
        await pilot.pause(0.1)
        assert "FATAL" in header(app) and "auto-restart on" not in header(app)
        assert supervisors(app) == 0
        await pilot.pause(0.5)  # nothing more is launched after FATAL
        assert len(run_dirs(root)) == 3


async def test_toggle_and_a_manual_kill_is_not_undone(root: Path) -> None:
    app = app_for(HostConfig(command=LOOP, run_root=str(root)))  # [restart] auto = false
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        assert supervisors(app) == 0 and "auto-restart" not in header(app)
        assert "Auto restart" in [c.title for c in app.get_system_commands(app.screen)]
        await pilot.press("A")
        await until(pilot, lambda: supervisors(app) == 1)
        assert app.current.auto == "on" and "auto-restart on" in header(app)
        await pilot.press("A")
        await until(pilot, lambda: supervisors(app) == 0)
        assert app.current.auto == "off" and "auto-restart" not in header(app)
        await pilot.press("A")
        await until(pilot, lambda: supervisors(app) == 1)
        await pilot.press("l")
        await until(pilot, lambda: run_state(app) == "running")
        await until(pilot, lambda: not app.control.waits_active())  # the launch action has ended
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: run_state(app) == "killed")
        # The supervisor's own word (the sample timeline says "stopped on request" too).
        await until(
            pilot,
            lambda: any(
                e.kind == "auto-restart" and "stopped on request: not restarted" in e.text
                for e in app.current.timeline.events
            ),
        )
        await pilot.pause(1.0)  # ten supervisor polls: nothing is relaunched
        assert len(run_dirs(root)) == 1 and run_state(app) == "killed"
        assert supervisors(app) == 1 and app.current.auto == "on"
        assert not any(e.kind == "restarted" for e in app.current.timeline.events)


async def test_read_only_never_supervises(root: Path) -> None:
    app = app_for(HostConfig(command=CRASH, run_root=str(root), restart=POLICY), read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await pilot.press("A")
        await pilot.pause(0.3)
        assert supervisors(app) == 0 and app.current.auto == "off"
        assert app.check_action("auto_restart", ()) is False
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Auto restart" not in titles and "Kill" not in titles
        assert "auto-restart" not in header(app)
        assert not root.exists() or not run_dirs(root)


async def test_the_timeline_says_each_restart_before_it_runs_in_time_order(root: Path) -> None:
    """A supervisor that polls slower than the backoff finds each crash's
    restart already due and launches at once; its "restart n/2" still comes before that
    restart's launch on screen, and the timeline's clock times never go back."""
    app = app_for(HostConfig(command=CRASH, run_root=str(root), restart=POLICY))
    app.host_states[0].bridge.supervise_poll = 1.0  # slower than the 0.2 s backoff
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await pilot.press("l")
        await until(pilot, lambda: app.current.auto == "fatal", timeout=30)
        await pilot.pause(1.0)  # the samples that see the last crash
        await pilot.press("e")  # the Timeline tab: its list is made now
        await pilot.pause(0.1)
        shown = app.screen.query_one(TimelineList).events
        times = [e.time for e in shown]
        assert times == sorted(times), [(e.time, e.kind, e.text) for e in shown]
        texts = [e.text for e in shown]
        for n in (1, 2):
            said = next(i for i, t in enumerate(texts) if f"restart {n}/2" in t)
            ran = [i for i, t in enumerate(texts) if t.startswith("auto-restart: launched run")]
            assert said < ran[n - 1], texts


async def test_turned_off_and_on_during_a_relaunch_that_launch_is_said(
    root: Path, tmp_path: Path
) -> None:
    """``A`` twice while the supervisor's relaunch waits out its start window: the supervisor
    turned off ends that launch and says it (a new one waits for it instead of cutting it
    off, which left a started run unsaid), and one supervisor goes on watching."""
    marker = shlex.quote(str(tmp_path / "crashed-once"))
    command = (
        f"if [ -e {marker} ]; then echo step=2 loss=1 tok/s=1; sleep 30; "
        f"else touch {marker}; echo step=1 loss=1 tok/s=1; exit 3; fi"
    )
    app = slow_relaunch(command, root)

    async with app.run_test(size=SIZE) as pilot:
        await relaunching(pilot, app, root)
        assert not said(app)  # the relaunch is under way: its start window runs
        await pilot.press("A")
        await pilot.press("A")
        assert app.current.auto == "on" and "auto-restart on" in header(app)
        await until(pilot, lambda: len(said(app)) == 1, timeout=10)
        assert said(app)[0].startswith("auto-restart: launched run ")
        assert "start window" not in said(app)[0]  # it lives: a restart that took
        notes = [(n.severity, str(n.message)) for n in app._notifications]
        assert ("warning", said(app)[0]) in notes
        await until(pilot, lambda: supervisors(app) == 1)
        assert app.current.auto == "on" and "auto-restart on" in header(app)
        await until(pilot, lambda: run_state(app) == "running")
        await pilot.pause(1.0)  # ten polls of the new supervisor: the live run is left alone
        assert len(run_dirs(root)) == 2 and len(said(app)) == 1


async def test_a_crash_while_the_new_supervisor_waits_is_restarted(
    root: Path, tmp_path: Path
) -> None:
    """``A`` twice while a relaunch waits out its start window, and that run dies in it: the
    supervisor turned on goes on from the one before (its count, its start), so that crash is
    restarted, not taken for one from before auto-restart was on."""
    count = shlex.quote(str(tmp_path / "attempts"))
    command = (
        f"n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; "
        "echo step=$n loss=1 tok/s=1; "
        "if [ $n -eq 1 ]; then exit 3; elif [ $n -eq 2 ]; then sleep 1.5; exit 3; else sleep 30; fi"
    )
    app = slow_relaunch(command, root)

    async with app.run_test(size=SIZE) as pilot:
        await relaunching(pilot, app, root)
        await pilot.press("A")
        await pilot.press("A")
        await until(pilot, lambda: len(run_dirs(root)) == 3, timeout=15)
        await until(pilot, lambda: len(said(app)) == 2 and run_state(app) == "running", timeout=10)
        assert app.current.auto == "on" and supervisors(app) == 1
        assert not any(e.kind == "FATAL" for e in app.current.timeline.events)
        assert not any("before auto-restart was on" in e.text for e in app.current.timeline.events)


async def test_a_launch_that_started_nothing_is_not_said_as_a_launch(root: Path) -> None:
    """What a relaunch reports is said as it is: a refusal beside a live run and a link lost
    mid-launch (whose run cannot be told ours) as warnings of their own, a run gone within its
    start window as an error; only a run that lives is "launched"."""
    refused = "run 7 is running: kill or restart it first (nothing was started)"
    lost = "launch: the link was lost (reset); read back, the latest run 8 is running, but"
    results = (
        LaunchResult(False, "running", refused, "7", refused=True, error=refused),
        LaunchResult(False, "none", lost, "8", error=lost),
        LaunchResult(False, "crashed", "run 9 crashed: exit 3", "9", error="exit 3"),
        LaunchResult(True, "running", "run 10 running (pid 1, group 1)", "10"),
    )

    async def reports(
        _policy: object,
        _stop: object,
        _decided: object,
        on_launch: Callable[..., None],
        **_: object,
    ) -> None:
        for res in results:
            on_launch(res)

    app = app_for(HostConfig(command=LOOP, run_root=str(root)))
    app.host_states[0].bridge.supervise = reports  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await pilot.press("A")
        await until(pilot, lambda: supervisors(app) == 0)
        said_now = [(e.kind, e.severity, e.text) for e in app.current.timeline.events]
        assert ("auto-restart", "warning", f"auto-restart: {refused}") in said_now
        assert ("auto-restart", "warning", f"auto-restart: {lost}") in said_now
        launched = [t for k, _, t in said_now if k == "restarted"]
        assert launched == [
            "auto-restart: launched run 9, which did not last its start window: exit 3",
            "auto-restart: launched run 10",
        ], said_now
        notes = [(n.severity, str(n.message)) for n in app._notifications]
        assert ("error", launched[0]) in notes and ("warning", launched[1]) in notes


async def test_a_supervisor_that_fails_says_so_and_is_off(root: Path) -> None:
    """A supervisor that raises (a bug) stops: the timeline and a notification say so, and the
    header no longer says it is on."""

    async def fails(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug in the loop")

    app = app_for(HostConfig(command=LOOP, run_root=str(root)))
    app.host_states[0].bridge.supervise = fails  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await pilot.press("A")
        await until(pilot, lambda: app.current.auto == "off" and supervisors(app) == 0)
        texts = [e.text for e in app.current.timeline.events if e.kind == "auto-restart"]
        assert any(
            t.startswith("auto-restart stopped: RuntimeError('a bug in the loop')")
            and t.endswith("A starts it again")
            for t in texts
        ), texts
        assert "auto-restart on" not in header(app)
