"""Many hosts: only the last few panes shown keep their widgets.

A user who looks at every one of many hosts must not bring back every host's ~40 widgets:
the panes of the hosts shown least recently lose theirs (tui/app/screens/main.py,
``PANES_KEPT``), and make them again from their store when shown again. What they show then
is what they would have shown had the widgets stayed (compared with the same session where no
pane loses its widgets), samples that came meanwhile included; the removed widgets are free.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from dataclasses import replace

import pytest
from support import LineCaches, until
from textual.pilot import Pilot
from textual.widget import Widget

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.findings.panel import FindingsList, TimelineList
from dflash_tui.app.host.gpus.board import GpuBoard
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.lines import SHELF_LINES
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.screens import main
from dflash_tui.app.widgets.rows import RowStatic
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)
N = main.PANES_KEPT + 2  # two hosts more than the panes kept
NOISE = 2000  # lines a sample that the default filter hides (3 samples: more than a tail keeps)


def noisy(snaps: list[Snapshot], first: int) -> list[Snapshot]:
    """The run log's lines of each sample after NOISE lines the default filter hides: after
    three samples the step lines of the first are no longer among the store's last 5,000
    lines, but still in the tail's view (which keeps the last 5,000 lines it shows)."""
    out = []
    for k, snap in enumerate(snaps):
        noise = tuple(f"noise {first + k}.{i}" for i in range(NOISE))
        log = snap.logs[0]
        out.append(replace(snap, logs=(replace(log, lines=noise + log.lines),)))
    return out


def many_hosts(scripts: list[list[Snapshot]]) -> tuple[DflashApp, list[ScriptedSource]]:
    cfg = Config(hosts=tuple(HostConfig(address=f"gpu-{i}") for i in range(len(scripts))))
    sources = [ScriptedSource(s) for s in scripts]
    return DflashApp(cfg, sources=sources), sources


def built(app: DflashApp) -> list[int]:
    return [p.index for p in app.screen.query(HostPane) if p.built]


def body_text(widget: Widget) -> str:
    return str(widget.query_one(".body", RowStatic).render())


def view_of(pane: HostPane) -> dict[str, object]:
    """What the pane shows, as text: header, GPU panels, findings, log lines and title,
    timeline, the tab and the modes the keys set."""
    (tail,) = pane.logs().tails.values()
    grid = pane.grid()
    gpus = [str(x.render()) for x in grid.lines.values()] if grid.compact else []
    return {
        "header": str(pane.query_one(RunHeader).render()),
        "gpus": gpus or str(pane.query_one(GpuBoard).render()),  # the lines, or the panels
        "compact": grid.compact,
        "findings": body_text(pane.query_one(FindingsList)),
        "lines": list(tail.log_view.lines),
        "title": str(tail.title_bar.render()),
        "timeline": body_text(pane.query_one(TimelineList)),
        "tab": pane.tabs().active,
        "history": pane.history_view,
        "filter": (pane.logs().filter_text, pane.logs().filter_on),
    }


async def visit_all_and_back(pilot: Pilot, app: DflashApp, source: ScriptedSource) -> None:
    """Host 1 is shown with its first samples, its timeline and compact GPUs; every other
    host is shown (host 1's widgets are removed past PANES_KEPT), host 1's next samples
    arrive meanwhile; then host 1 is shown again."""
    await pilot.press("2")
    await until(pilot, lambda: app.host_states[1].samples >= 4)
    await pilot.pause(0.15)  # one flush of the tails
    await pilot.press("e", "c")
    for key in range(3, N + 1):
        await pilot.press(str(key))
    for snap in scenes.healthy_run(samples=8)[4:]:
        source.push(snap)
    await until(pilot, lambda: app.host_states[1].samples >= 8)
    await pilot.press("2")
    await pilot.pause(0.3)


async def test_visiting_every_host_keeps_the_widgets_of_the_last_few_shown() -> None:
    """At most PANES_KEPT panes have widgets whatever was visited; the others' are removed
    (and free: nothing keeps them alive), so the widget count after visiting every host is
    the count after visiting PANES_KEPT of them, plus one anchor per emptied pane."""
    app, _ = many_hosts([scenes.healthy_run(samples=3) for _ in range(N)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: all(s.samples >= 3 for s in app.host_states))
        first = app.screen.query_one("#host-0", HostPane)
        widgets = {id(w): weakref.ref(w) for w in first.query("*")}
        counts = []
        for i in range(1, N):
            await pilot.press("right_square_bracket")
            assert built(app) == sorted(app.screen.recent) and app.selected == i
            assert len(built(app)) == min(i + 1, main.PANES_KEPT)
            await pilot.pause(0.1)  # the new pane's tails mounted
            counts.append(len(app.screen.query("*")))
        full = counts[main.PANES_KEPT - 2]  # PANES_KEPT hosts shown, none emptied yet
        assert counts[-1] <= full + (N - main.PANES_KEPT), counts
        assert not first.built and first.store.panels
        await pilot.pause(0.1)
        gc.collect()
        assert len(widgets) > 30
        alive = [w for r in widgets.values() if (w := r()) is not None]
        assert alive == [], [type(w).__name__ for w in alive]


async def test_the_lines_the_removed_widgets_drew_go_with_them() -> None:
    """A pane emptied leaves no drawn lines behind: Textual keeps the line caches of up to
    1024 removed widgets alive, and without them emptied before the removal
    (tui/app/widgets/removal.py) each held every line its widget drew."""
    app, _ = many_hosts([scenes.healthy_run(samples=3) for _ in range(N)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: all(s.samples >= 3 for s in app.host_states))
        await pilot.pause(0.2)  # drawn
        first = app.screen.query_one("#host-0", HostPane)
        caches = LineCaches()
        caches.take(first)
        assert caches.with_lines() > 20  # what it drew
        for _ in range(1, N):
            await pilot.press("right_square_bracket")
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        assert not first.built
        assert caches.removed() > 30
        assert caches.left_with_lines() == []


async def session(kept: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """``visit_all_and_back`` with ``kept`` panes kept: what host 2's pane shows at the end."""
    monkeypatch.setattr(main, "PANES_KEPT", kept)
    scripts = [scenes.healthy_run(samples=2) for _ in range(N)]
    scripts[1] = noisy(scenes.healthy_run(samples=4), 0)
    app, sources = many_hosts(scripts)
    async with app.run_test(size=SIZE) as pilot:
        await visit_all_and_back(pilot, app, sources[1])
        pane = app.screen.query_one("#host-1", HostPane)
        assert pane.built and app.screen.recent[-1] == 1
        assert len(built(app)) == min(kept, N)
        return view_of(pane)


async def test_a_host_shown_again_shows_what_it_would_have_had_its_widgets_stayed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same session twice: with the panes kept as shipped (host 2's widgets removed
    while the other hosts are looked at) and with every pane kept. Host 2 shown again shows
    the same header, GPU panels (their sparklines), findings, log lines (those of its first
    sample too, older than the store's last 5,000), timeline, tab and compact mode."""
    rebuilt = await session(main.PANES_KEPT, monkeypatch)
    kept = await session(N, monkeypatch)
    lines = rebuilt["lines"]
    assert isinstance(lines, list) and lines and not any("noise" in x for x in lines)
    assert sum("step=100 " in x for x in lines) == 1  # the first sample's first step
    assert rebuilt["tab"] == "tab-timeline" and rebuilt["compact"]
    assert "RUNNING" in str(rebuilt["header"])
    assert rebuilt == kept


async def test_a_sample_during_the_removal_is_kept_and_drawn_when_shown() -> None:
    """A sample for a host whose widgets are being removed is folded into its store (nothing
    drawn on the widgets going), and the widgets made again show it."""
    healthy = scenes.healthy_run(samples=6)
    app, sources = many_hosts([healthy[:3], scenes.healthy_run(samples=2)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.host_states[0].samples >= 3)
        await pilot.press("2")
        pane = app.screen.query_one("#host-0", HostPane)
        removal = asyncio.ensure_future(pane.drop())
        await asyncio.sleep(0)  # started: the widgets are going
        assert not pane.built
        for snap in healthy[3:]:
            sources[0].push(snap)
        await until(pilot, lambda: app.host_states[0].samples >= 6)
        await removal
        assert not pane.query(".pane-body")
        await pilot.press("1")
        await pilot.pause(0.2)
        tree_last = pane.procs().last
        assert tree_last is not None and tree_last[0] is healthy[-1]
        (tail,) = pane.logs().tails.values()
        assert list(tail.log_view.lines) == list(tail.data.store.lines)[-len(tail.log_view.lines) :]
        assert any("step=150" in x for x in tail.log_view.lines)  # the last sample's


async def test_what_the_log_keys_set_is_kept_over_a_rebuild() -> None:
    """The filter's text, a paused tail and where it was scrolled, the wrap mode and the
    search, the zoomed area and the history's zoom are as they were; the rest (the current
    match, the tree's selection) starts again as in a new pane."""
    healthy = scenes.healthy_run(samples=12)
    app, _ = many_hosts([healthy, *[scenes.healthy_run(samples=2)] * (N - 1)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.host_states[0].samples >= 12)
        await pilot.pause(0.15)
        pane = app.screen.query_one("#host-0", HostPane)
        app.apply_filter("step|loss")
        area = pane.logs()
        area.apply_search("loss=")
        (tail,) = area.tails.values()
        tail.log_view.focus()
        await pilot.press("f")  # paused
        await pilot.pause(0.1)
        tail.log_view.scroll_to(y=5, animate=False, immediate=True)
        await pilot.press("plus")  # the tail zoomed
        assert pane.zoom.area is tail
        before = (str(tail.title_bar.render()), list(tail.log_view.lines), tail.log_view.scroll_y)
        for key in range(2, N + 1):
            await pilot.press(str(key))
        assert not pane.built and not pane.zoom.on
        assert not app.screen.query(".-zoom-hidden")  # the overview is shown again
        await pilot.press("1")
        await pilot.pause(0.3)
        area = pane.logs()
        (tail,) = area.tails.values()
        assert (area.filter_text, area.filter_on, area.follow, area.search_text) == (
            "step|loss",
            True,
            False,
            "loss=",
        )
        assert pane.zoom.area is tail
        after = (str(tail.title_bar.render()), list(tail.log_view.lines), tail.log_view.scroll_y)
        assert after == before and before[2] == 5


async def test_a_host_never_shown_keeps_its_newest_lines_and_says_what_went() -> None:
    """A host whose pane was never made keeps only the newest SHELF_LINES of each log; shown,
    its tail draws them under a mark that says how many earlier ones went."""
    flood = 3 * SHELF_LINES
    snaps = scenes.healthy_run(samples=2)
    log = snaps[-1].logs[0]
    steps = tuple(f"step={i} loss=1.0" for i in range(flood))
    snaps[-1] = replace(snaps[-1], logs=(replace(log, lines=steps),))
    app, _ = many_hosts([scenes.healthy_run(samples=2), snaps])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.host_states[1].samples >= 2)
        store = app.screen.query_one("#host-1", HostPane).store
        (data,) = store.logs.values()
        assert len(data.store.lines) <= SHELF_LINES  # what a never-shown tail holds
        await pilot.press("2")
        pane = app.screen.query_one("#host-1", HostPane)
        (tail,) = pane.logs().tails.values()
        await until(pilot, lambda: any(f"step={flood - 1} " in x for x in tail.log_view.lines))
        lines = list(tail.log_view.lines)
        marks = [x for x in lines if "earlier lines not kept while not shown" in x]
        assert len(marks) == 1 and lines.index(marks[0]) < lines.index(f"step={flood - 1} loss=1.0")
        gone = int(marks[0].split()[1].replace(",", ""))
        kept = [x for x in lines if x.startswith("step=")]
        assert gone >= flood - SHELF_LINES and kept[-SHELF_LINES:] == list(steps[-SHELF_LINES:])


def flooded(lines: int) -> list[Snapshot]:
    """A healthy run whose last sample's run log brings ``lines`` step lines."""
    snaps = scenes.healthy_run(samples=2)
    log = snaps[-1].logs[0]
    steps = tuple(f"step={i} loss=1.0" for i in range(lines))
    snaps[-1] = replace(snaps[-1], logs=(replace(log, lines=steps),))
    return snaps


async def test_the_host_on_screen_keeps_every_line_of_a_new_log() -> None:
    """Shelving is for logs no widget holds: the host shown keeps a new log's lines whole,
    however many its first sample brings."""
    many = 3 * SHELF_LINES
    app, _ = many_hosts([flooded(many), scenes.healthy_run(samples=2)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.host_states[0].samples >= 2)
        (tail,) = app.screen.query_one("#host-0", HostPane).logs().tails.values()
        await until(pilot, lambda: f"step={many - 1} loss=1.0" in tail.log_view.lines)
        lines = list(tail.log_view.lines)
        assert not any("not kept while not shown" in x for x in lines)
        assert sum(x.startswith("step=") and "loss=1.0" in x for x in lines) >= many
        assert "skipped" not in str(tail.title_bar.render())


@pytest.mark.parametrize("row", [3 * SHELF_LINES - 40, 100])
async def test_a_paused_tail_made_again_shows_the_rows_it_showed(row: int) -> None:
    """A paused tail scrolled to ``row`` of 3 x SHELF_LINES: its pane's widgets removed,
    only the newest SHELF_LINES rows are kept, under a mark. Made again, it shows the same
    row at its top when that row was kept, else the mark (where the rows went)."""
    app, _ = many_hosts([flooded(3 * SHELF_LINES), *[scenes.healthy_run(samples=2)] * (N - 1)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.host_states[0].samples >= 2)
        pane = app.screen.query_one("#host-0", HostPane)
        (tail,) = pane.logs().tails.values()
        await until(pilot, lambda: len(tail.log_view.lines) >= 3 * SHELF_LINES)
        tail.log_view.focus()
        await pilot.press("f")  # paused
        await pilot.pause(0.1)
        tail.log_view.scroll_to(y=row, animate=False, immediate=True)
        at = tail.log_view.lines[int(tail.log_view.scroll_y)]
        for key in range(2, N + 1):
            await pilot.press(str(key))
        assert not pane.built
        await pilot.press("1")
        await pilot.pause(0.3)
        (tail,) = pane.logs().tails.values()
        shown = list(tail.log_view.lines)
        assert "earlier lines not kept while not shown" in shown[0]
        assert len(shown) == SHELF_LINES + 1
        top = shown[int(tail.log_view.scroll_y)]
        if row >= 2 * SHELF_LINES:  # among the newest SHELF_LINES rows
            assert top == at
        else:
            assert top == shown[0]
