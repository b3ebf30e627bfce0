"""While no sample comes, nothing is called healthy.

The feed stops (samples overdue) or says the link is down: the findings never say ``OK nothing
wrong``; the last known GPU panels and the process tree are greyed and say how old they are,
counting up; the next sample makes them live again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from support import until
from textual.pilot import Pilot
from textual.timer import Timer
from textual.widgets import TabbedContent

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.gpus.panel import GpuPanel
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.pane import stale_after
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.host.source import Disconnected, ScriptedSource
from dflash_tui.app.widgets.palette import palette_for
from dflash_tui.core.base.config_types import Config, HostConfig

SIZE = (120, 40)
INTERVAL = 0.5
# An interval no test outlasts: a view fed at it goes stale only when its link goes down, so
# checks of the live view hold however long a loaded machine takes to make them.
LIVE = 30.0


def findings_text(app: DflashApp) -> str:
    return str(app.screen.query_one(FindingsList).query_one(".body").render())


def procs_tab(app: DflashApp) -> str:
    return app.screen.query_one("#right-tabs", TabbedContent).get_tab("tab-procs").label_text


def header_text(app: DflashApp) -> str:
    return str(app.screen.query_one(RunHeader).render()).split("\n")[0]


def panels(app: DflashApp) -> list[GpuPanel]:
    return list(app.screen.query_one(GpuGrid).panels.values())


def titles(app: DflashApp) -> list[str]:
    """The top row of each panel as drawn (its title in its border)."""
    return [p.shown[0].plain for p in panels(app)]


def frames(app: DflashApp) -> list[object]:
    """The colour each panel's box is drawn in."""
    return [p.shown[0].style for p in panels(app)]


def healthy(interval: float = INTERVAL) -> list:  # type: ignore[type-arg]
    """The healthy scene, as a live probe would send it (with its interval)."""
    return [replace(s, interval=interval) for s in scenes.healthy_run(samples=4)]


async def fresh(pilot: Pilot, app: DflashApp, n: int) -> None:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.1)
    assert "OK" in findings_text(app) and "nothing wrong" in findings_text(app)
    assert not any(p.stale_s is not None for p in panels(app))
    assert " stale " not in " ".join(titles(app))
    assert palette_for(app.current_theme).fg("ok") in frames(app)  # a healthy GPU is green
    assert not app.screen.query_one(ProcTree).has_class("-stale")
    assert procs_tab(app) == "Processes"
    assert " up " in header_text(app) and "(old)" not in header_text(app)
    assert "last sample" not in header_text(app)


def assert_stale(app: DflashApp) -> None:
    text = findings_text(app)
    assert "nothing wrong" not in text and "OK" not in text.split(), text
    assert "STALE" in text and "last sample" in text and "health now is unknown" in text
    assert panels(app) and all(p.stale_s is not None for p in panels(app))
    ok = palette_for(app.current_theme).fg("ok")
    assert ok not in frames(app)  # no green border on old data
    assert all(" stale " in t for t in titles(app)), titles(app)
    assert app.screen.query_one(ProcTree).has_class("-stale")
    assert "stale" in procs_tab(app)
    # the run's uptime no sample measures now is not shown as if it were counting
    head = header_text(app)  # the long form where the width allows
    assert "at the last sample" in head or " (old)" in head, head


def age_in(title: str) -> int:
    return int(title.split(" stale ")[1].split("s")[0])


async def test_a_link_down_greys_the_last_known_state_and_says_nothing_is_ok() -> None:
    snaps = healthy(LIVE)
    source = ScriptedSource(snaps[:2])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await fresh(pilot, app, 2)
        source.push(Disconnected("ssh: connection to box lost", 30.0))
        await until(pilot, lambda: app.current.link == "down")
        await until(pilot, lambda: "STALE" in findings_text(app))
        assert "LINK" in findings_text(app) and "connection to box lost" in findings_text(app)
        assert_stale(app)
        first = age_in(titles(app)[0])
        # the age counts up: it does not freeze silently
        await until(pilot, lambda: age_in(titles(app)[0]) >= first + 2, timeout=10)
        assert_stale(app)
        source.push(snaps[2])  # the link is back: live again
        await fresh(pilot, app, 3)


async def test_overdue_samples_are_stale_without_any_error() -> None:
    """The live view is checked on samples at an interval no test outlasts; then one sample
    says 0.5 s and nothing follows it (a frozen link, no error): stale once 1 s has passed,
    not before; the next sample makes the view live again."""
    snaps = healthy(LIVE)
    source = ScriptedSource(snaps[:1])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await fresh(pilot, app, 1)
        source.push(replace(snaps[1], interval=INTERVAL))
        await until(pilot, lambda: app.samples >= 2)
        await until(pilot, lambda: "STALE" in findings_text(app), timeout=15)
        sample_at = app.detail().sample_at
        assert sample_at is not None
        assert time.monotonic() - sample_at >= stale_after(INTERVAL)
        assert_stale(app)
        source.push(snaps[2])
        await fresh(pilot, app, 3)


async def test_a_link_down_before_any_sample_calls_nothing_healthy() -> None:
    source = ScriptedSource([Disconnected("ssh: connect refused", 30.0)])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.current.link == "down")
        await until(pilot, lambda: "LINK" in findings_text(app))
        text = findings_text(app)
        assert "nothing wrong" not in text and "no sample yet" in text, text


async def test_samples_in_time_wake_nothing_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing polls while samples come in time: no Textual timer ticks (the
    links' countdown runs only while a host is down, the wait bar's ETA timer is stopped) and
    the age of the last sample is looked at only when the next one is overdue. Then, with
    no sample, the view goes stale and its age counts up (the look is planned again)."""
    ticked: list[str] = []
    tick = Timer._tick

    async def counted(self: Timer, **kw: Any) -> None:
        ticked.append(getattr(self._callback, "__qualname__", str(self.name)))
        await tick(self, **kw)

    monkeypatch.setattr(Timer, "_tick", counted)
    # The samples say a 5 s interval (overdue after 7.5 s) and come every 0.5 s: in time with
    # 7 s to spare at each.
    snaps = [replace(s, interval=5.0) for s in healthy()]
    source = ScriptedSource(snaps[:1])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await fresh(pilot, app, 1)
        pane = app.detail()
        looks = [0]
        look = pane.check_stale

        def counted_look() -> None:
            looks[0] += 1
            look()

        pane.check_stale = counted_look  # type: ignore[method-assign]
        area = pane.query_one(LogArea)
        await until(pilot, lambda: not area.flushing)  # the first sample's lines are drawn
        ticked.clear()
        for i in range(1, 7):  # 3 s of samples, each in time, no new log line
            snap = snaps[i % len(snaps)]
            logs = tuple(replace(log, lines=()) for log in snap.logs)
            source.push(replace(snap, time=snaps[0].time + i * INTERVAL, logs=logs))
            await pilot.pause(INTERVAL)
        await until(pilot, lambda: app.samples >= 7)
        assert looks[0] == 0
        quiet = {"Screen._on_timer_update", "HistoryView._redraw"}  # drawing; every 5 s
        assert set(ticked) <= quiet, ticked
        await until(pilot, lambda: "STALE" in findings_text(app), timeout=20)
        assert_stale(app)
        first = age_in(titles(app)[0])
        await until(pilot, lambda: age_in(titles(app)[0]) >= first + 2, timeout=10)


async def test_the_headers_counts_are_the_last_samples_while_stale() -> None:
    """The seed incident's three warnings, then the link goes down: the header says they are
    the last sample's (muted), not warnings counted now; the next sample makes them current."""
    snaps = [replace(s, interval=LIVE) for s in scenes.seed_incident()]
    source = ScriptedSource(snaps[:-1])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)

    def counts() -> str:
        return str(app.screen.query_one(RunHeader).render()).split("\n")[1].split("│")[-1]

    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps) - 1)
        await pilot.pause(0.1)
        assert counts().strip() == "3 warnings", counts()
        source.push(Disconnected("ssh: connection to box lost", 30.0))
        await until(pilot, lambda: app.current.link == "down")
        await until(pilot, lambda: "last sample" in counts())
        assert counts().strip() == "3 warnings at the last sample", counts()
        source.push(snaps[-1])
        await until(pilot, lambda: app.samples >= len(snaps))
        await until(pilot, lambda: counts().strip() == "3 warnings")


async def test_an_unreachable_host_offers_no_key() -> None:
    """The seed incident's log-missing finding offers ``(press l)``; once the link is down the
    launch could not be sent, so the finding offers no key until samples come again."""
    snaps = [replace(s, interval=LIVE) for s in scenes.seed_incident()]
    source = ScriptedSource(snaps[:-1])
    app = DflashApp(Config(hosts=(HostConfig(),)), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps) - 1)
        await until(pilot, lambda: "(press l)" in findings_text(app))
        source.push(Disconnected("ssh: connection to box lost", 30.0))
        await until(pilot, lambda: "LINK" in findings_text(app))
        text = findings_text(app)
        assert "log-missing" in text and "(press" not in text, text
        source.push(snaps[-1])
        await until(pilot, lambda: "(press l)" in findings_text(app))
