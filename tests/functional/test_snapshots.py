"""SVG snapshots of the seed-incident screen and a healthy run, in several themes.

Deterministic: the app is fed fixed scenes (tui/app/scenes.py) through ScriptedSource, so no
clock, PID or reading varies. Update after an intended change with
``pytest tests/functional/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import time

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.logs.widget import TailLog
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.config_types import Config

SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # the timeline prints local clock times
    time.tzset()


def scene_app(name: str, theme: str) -> tuple[DflashApp, int]:
    snaps = getattr(scenes, name)()
    return DflashApp(Config(theme=theme), source=ScriptedSource(snaps)), len(snaps)


async def tails_drawn(app: DflashApp, pilot: Pilot) -> None:
    """Every log tail drawn to its end: the last samples' lines flushed and a following tail
    scrolled there, after anything that resized it (on a loaded machine the flush timer may
    lag the last sample or the resize by more than a fixed pause)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20:
        await pilot.pause(0.05)  # a refresh first: a resize's layout, then its flush
        if not any(t.waiting for t in app.screen.query(LogTail)):
            return


def settled(app: DflashApp, n: int):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot) -> None:
        t0 = time.monotonic()
        while app.samples < n and time.monotonic() - t0 < 20:
            await pilot.pause(0.02)
        await tails_drawn(app, pilot)
        await pilot.pause(0.3)  # log flush + the Log's width worker
        await pilot.wait_for_scheduled_animations()

    return run_before


@pytest.mark.parametrize("theme", ["dflash-dark", "dflash-light", "dflash-contrast"])
def test_seed_incident_screen(snap_compare, theme: str) -> None:  # type: ignore[no-untyped-def]
    app, n = scene_app("seed_incident", theme)
    assert snap_compare(app, terminal_size=SIZE, run_before=settled(app, n))


@pytest.mark.parametrize("theme", ["dflash-dark", "dflash-light"])
def test_healthy_run_screen(snap_compare, theme: str) -> None:  # type: ignore[no-untyped-def]
    app, n = scene_app("healthy_run", theme)
    assert snap_compare(app, terminal_size=SIZE, run_before=settled(app, n))


def test_history_tab_shows_the_whole_run(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The History tab after `e e`: the loss and tok/s curves span the hour of steps before
    the app attached (the probe's backlog) and the 20 minutes after; utilisation, power and
    memory per GPU over the 20 minutes of samples, with their dip at minutes 70 to 72."""
    app, n = scene_app("history_run", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("e", "e")
        view = app.detail().history()
        t0 = time.monotonic()
        await pilot.pause(0.1)
        while view.building and time.monotonic() - t0 < 60:  # the plots build in a thread
            await pilot.pause(0.05)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_compact_gpus_at_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """80x24 with 8 GPUs: eight panels do not fit, so one line per GPU (role, bars,
    temperature, power, chips, top process), all eight in sight."""
    app, n = scene_app("seed_incident", "dflash-dark")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled(app, n))


def test_zoomed_log(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The run's log focused, then `+`: it fills the screen; the footer stays."""
    app, n = scene_app("healthy_run", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        app.detail().logs().query_one(TailLog).focus()
        await pilot.press("plus")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_gpu_process_table(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`p`: the GPU process table across all GPUs, sorted by GPU, with another user's job
    and an orphan beside the run."""
    app, n = scene_app("gpu_processes", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("p")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_host_strip_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The healthy run with the host's readings and heartbeats: the strip under the metrics
    says RAM, swap and the run root's shrinking disk (LOW), and the workers' row marks
    drafter 1 (GPU 6) BEHIND while the others wait on it."""
    app, n = scene_app("host_health", "dflash-dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=settled(app, n))


def test_timeline_tab(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`e`: the Timeline tab, its newest events in view (its list is made when the tab is
    first shown, from the events the host's store kept)."""
    app, n = scene_app("seed_incident", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("e")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def steady_cursor(app: DflashApp) -> None:
    """The focused box's cursor shown, not blinking: a blink's phase would vary the picture."""
    box = app.focused
    assert isinstance(box, Input)
    box.cursor_blink = False


def test_log_filter_and_search_boxes(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`/` opens the log filter's box with the filter in force; typed into and escaped, then
    `s` opens the search box with a pattern typed (the boxes are made when first opened)."""
    app, n = scene_app("healthy_run", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("slash", "x", "escape", "s", "s", "t", "e", "p")
        steady_cursor(app)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_gpu_table_filter_box(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`p`, then `/` in the table: its filter box, a filter typed, the rows it keeps."""
    app, n = scene_app("gpu_processes", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("p")
        await pilot.pause(0.2)
        await pilot.press("slash", "o", "r", "p")
        steady_cursor(app)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_compact_lines_and_back(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """`c` at 120x40: one line per GPU (made the first time they are asked for)."""
    app, n = scene_app("seed_incident", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        await pilot.press("c")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_wait_bar(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """A control action's wait at the bottom: what it waits for, its progress, esc."""
    app, n = scene_app("healthy_run", "dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settled(app, n)(pilot)
        wait = app.screen.query_one(WaitBar)
        wait.start("stopping the run")
        wait.step("waiting for GPU memory to be released", 3, 10)
        await pilot.pause(0.3)
        await tails_drawn(app, pilot)  # the bar took a row from the log, which follows

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
