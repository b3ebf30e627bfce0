"""The log pane's follow state never lies.

A real job prints two lines every 50 ms under a temporary run root; whatever is toggled (``a``,
``f``, a custom ``/`` filter, in any order), while the title says ``follow`` the newest line
the filter shows is on screen within one refresh. The job is killed through run control
afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import screen_text, until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
JOB = (
    'i=0; while true; do i=$((i+1)); echo "step=$i loss=1.0 tok/s=100"; '
    'echo "other line $i"; sleep 0.05; done'
)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"))
    yield h
    transport = make_transport(h)
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


def newest_on_screen(tail: LogTail) -> bool:
    """The newest line the filter lets through is drawn, and the view shows the last row."""
    view = tail.log_view
    store = tail.data.store
    shown = [x for x in store.lines if store._shows(x)]
    if not shown or not view.lines or view.lines[-1] != shown[-1]:
        return False
    return view.scroll_offset.y + view.scrollable_content_region.height >= view.line_count


async def following(pilot: Pilot, tail: LogTail, what: str) -> None:
    """A couple of samples later (interval 0.5 s), the newest line is on screen."""
    assert tail.follow, what
    try:
        await until(pilot, lambda: newest_on_screen(tail), timeout=4.0)
    except AssertionError:
        view = tail.log_view
        raise AssertionError(
            f"after {what}: title says follow, but row {view.scroll_offset.y} of "
            f"{view.line_count} is shown (last drawn {view.lines[-1] if view.lines else None!r},"
            f" newest {tail.data.store.lines[-1]!r})"
        ) from None


async def test_follow_holds_whatever_is_toggled(host: HostConfig) -> None:
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("l")
        await until(
            pilot, lambda: any(t.data.store.received > 300 for t in app.screen.query(LogTail))
        )
        await until(pilot, lambda: not app.control.waits_active())
        tail = app.screen.query_one(LogTail)
        await following(pilot, tail, "the launch")
        await pilot.press("a")  # all lines
        await following(pilot, tail, "a")
        await pilot.press("a")  # filtered again
        await following(pilot, tail, "a a")
        await pilot.press("slash")
        box = app.screen.query_one("#log-filter")
        box.value = "other"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await following(pilot, tail, "a custom filter")
        await pilot.press("a")
        await following(pilot, tail, "a custom filter, then a")
        await pilot.press("f")
        assert not tail.follow and "paused" in str(tail.title_bar.render())
        # Said inside the pane too: at 120 columns the title is cut before its end.
        await until(
            pilot, lambda: "paused: new lines are not scrolled to (f: follow)" in screen_text(app)
        )
        await pilot.pause(0.6)
        await pilot.press("a")  # toggled while paused: follow comes back where it is
        await pilot.press("f")
        await following(pilot, tail, "f, a, f")
        assert "follow" in str(tail.title_bar.render())
        assert "paused" not in screen_text(app)


async def test_a_following_tail_stays_at_its_end_when_the_wait_bar_takes_a_row() -> None:
    """The wait bar at the bottom takes a row of the screen; Textual sends the log view it
    shrinks no resize. A following tail must still show its last line, with no new line
    to bring it there (the scripted samples have all come)."""
    from dflash_tui.app import scenes
    from dflash_tui.app.host.logs.area import LogArea
    from dflash_tui.app.host.source import ScriptedSource
    from dflash_tui.app.widgets.waits import WaitBar

    snaps = scenes.healthy_run()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        tail = app.screen.query_one(LogTail)
        await until(pilot, lambda: not tail.waiting)
        area = tail.parent
        assert isinstance(area, LogArea)
        await until(pilot, lambda: not area.flushing)  # quiet: its flush timer has paused
        height = tail.log_view.size.height
        app.screen.query_one(WaitBar).start("stopping the run")
        await until(pilot, lambda: tail.log_view.size.height == height - 1)
        await until(pilot, lambda: tail.log_view.is_vertical_scroll_end)
        assert tail.follow and tail.log_view.lines[-1].startswith("step=")
        app.screen.query_one(WaitBar).stop()
        await until(pilot, lambda: tail.log_view.size.height == height)
        await until(pilot, lambda: tail.log_view.is_vertical_scroll_end)
