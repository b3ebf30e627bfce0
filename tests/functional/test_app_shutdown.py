"""What arrives while the app exits, or for a host's pane that is gone, draws nothing and raises
nothing (tui/app/host/pane.py's guard): the feed workers, the link tick and a cancelled control
action can all still report while Textual closes the screens."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

from support import until
from textual.screen import Screen

from dflash_tui.app import app as app_module
from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.screens.main import MainScreen
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import FeedEvent

SIZE = (120, 40)


class LateScreen(MainScreen):
    """A main screen that, once its widgets are gone, has the app receive what a feed, the
    link tick and a cancelled action would still send at that moment."""

    def on_unmount(self) -> None:
        app = self.app
        assert isinstance(app, DflashApp)
        state = app.host_states[0]
        assert state.last is not None
        app.call_later(app.feeds.sample_ready, state, dataclasses.replace(state.last))
        app.call_later(app.feeds.link_down, state, "connection lost", 2.0)
        app.call_later(app.control.done, state.key, "kill", False, "kill cancelled")
        app.call_later(app.feeds.tick_links)  # after the link broke: redraws a host that is down


class LateApp(DflashApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))  # not next to this test

    def get_default_screen(self) -> Screen[None]:
        return LateScreen([s.key for s in self.host_states], self.read_only, self.apply_filter)


class Flood:
    """Samples as fast as they are drawn, for ever (a busy host while the user quits)."""

    def __init__(self, samples: list[Snapshot]) -> None:
        self.samples = samples

    async def events(self) -> AsyncIterator[FeedEvent]:
        for snap in itertools.cycle(self.samples):
            yield snap
            await asyncio.sleep(0)

    async def close(self) -> None:
        pass


def drawing_toasts(app: DflashApp) -> list[str]:
    return [str(n.message) for n in app._notifications if "drawing" in str(n.message)]


async def test_messages_after_the_screen_is_gone_are_not_drawn() -> None:
    app = LateApp(Config(), source=ScriptedSource(scenes.seed_incident()[:1]))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.samples >= 1)
    # run_test re-raises what failed in a handler during the shutdown (main screen missing).
    assert app.return_code in (None, 0)
    assert app.samples == 1 and not app.draw_errors and drawing_toasts(app) == []


async def quit_amid_a_flood() -> DflashApp:
    app = DflashApp(Config(), source=Flood(scenes.healthy_run()))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.samples >= 3)
    return app


async def test_samples_flooding_in_while_the_app_exits() -> None:
    for _ in range(5):  # the race is one of timing: a few quits in a row
        app = await quit_amid_a_flood()
        assert app.return_code in (None, 0)
        assert not app.draw_errors and drawing_toasts(app) == []


async def test_a_message_for_a_removed_pane_is_not_drawn() -> None:
    seed, healthy = scenes.seed_incident(), scenes.healthy_run()
    cfg = Config(hosts=(HostConfig(address="gpu-a"), HostConfig(address="gpu-b")))
    sb = ScriptedSource(healthy[:2])
    app = DflashApp(cfg, sources=[ScriptedSource(seed[:2]), sb])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        a, b = app.host_states
        await until(pilot, lambda: a.samples >= 2 and b.samples >= 2)
        await app.screen.query_one("#host-1", HostPane).remove()
        sb.push(healthy[2])  # through the feed: its worker must not wait on a draw for ever
        await until(pilot, lambda: b.last is not None and b.last.snapshot is healthy[2])
        app.feeds.link_down(b, "connection lost", 2.0)
        await pilot.pause(0.2)
        assert app.is_running and b.samples == 2 and b.link == "down"
        assert not app.draw_errors and drawing_toasts(app) == []
        assert app.screen.query_one(HostOverview).rows[1].link == "down"  # the row still is


async def test_a_pane_that_is_not_mounted_draws_nothing() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.seed_incident()[:1]))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        msg = app.current.last
        assert isinstance(msg, SampleReady)
        pane = HostPane("elsewhere", 7, read_only=False)
        assert pane.show_sample(msg) is False
        pane.show_link_down("connection lost", msg.diagnosis.findings)
        pane.show_auto("on")
        pane.add_events(msg.events)
        await pilot.pause(0.1)
        assert app.is_running and not app.draw_errors and drawing_toasts(app) == []
