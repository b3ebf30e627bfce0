"""Several hosts in one app: the overview, switching the detailed view, a host that is down, and
keys acting on the shown host only.

Scripted hosts (no probe, no clock): host A plays the seed incident, host B a healthy run
(tui/app/scenes.py). The launch test runs two real local hosts with their own run roots.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.scenario import FakeSmi
from support import until
from textual.pilot import Pilot

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.feeds import OVERVIEW_EVERY
from dflash_tui.app.host.findings.panel import FindingsList, TimelineList
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.gpus.panel import HISTORY
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.host.source import Disconnected, ScriptedSource
from dflash_tui.app.host.state import summarize
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.app.widgets.rows import RowStatic
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
A, B = "gpu-a", "gpu-b"


def two_hosts(
    a: list[Snapshot], b: list[Snapshot], **kw: object
) -> tuple[DflashApp, ScriptedSource, ScriptedSource]:
    cfg = Config(hosts=(HostConfig(address=A), HostConfig(address=B)), **kw)  # type: ignore[arg-type]
    sa, sb = ScriptedSource(a), ScriptedSource(b)
    return DflashApp(cfg, sources=[sa, sb]), sa, sb


async def settle(pilot: Pilot, app: DflashApp, na: int, nb: int) -> None:
    a, b = app.host_states
    await until(pilot, lambda: a.samples >= na and b.samples >= nb)
    await pilot.pause(0.15)  # one flush of the log tails


def row(app: DflashApp, i: int) -> str:
    return app.screen.query_one(HostOverview).row_text(i)


def pane_text(app: DflashApp, i: int, widget: type) -> str:
    return str(app.screen.query_one(f"#host-{i}").query_one(widget).render())


def shown(app: DflashApp) -> int:
    panes = [p for p in app.screen.query(".host-pane") if p.display]
    assert len(panes) == 1
    return int(str(panes[0].id).removeprefix("host-"))


def row_redraws(app: DflashApp, i: int) -> list[str]:
    """Host ``i``'s overview row as each later redraw of the overview left it."""
    overview = app.screen.query_one(HostOverview)
    drawn: list[str] = []
    redraw = overview.redraw
    overview.redraw = lambda: (redraw(), drawn.append(row(app, i)))  # type: ignore[method-assign]
    return drawn


def timeline_text(pane: HostPane) -> str:
    return str(pane.query_one(TimelineList).query_one(".body", RowStatic).render())


def labels(app: DflashApp, i: int) -> dict[int, tuple[str, ...]]:
    grid = app.screen.query_one(f"#host-{i}").query_one(GpuGrid)
    return {k: p.view.codes for k, p in grid.panels.items() if p.view}


async def test_overview_lists_every_host_with_its_summary() -> None:
    seed, healthy = scenes.seed_incident(), scenes.healthy_run()
    app, _, _ = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        ra, rb = app.screen.query_one(HostOverview).rows
        da, db = (s.diagnosis for s in app.host_states)
        assert da is not None and db is not None
        assert (ra.key, ra.link, ra.run_state, ra.run_id) == (A, "connected", "none", None)
        assert (ra.target, ra.drafter) == (
            ("3/5", "bad"),
            ("2/3", "bad"),
        )  # idle with no run is fit; busy-no-memory not
        assert ra.worst == da.worst() == "warning" and ra.findings == len(da.findings)
        assert ra.worst_count == sum(f.severity == "warning" for f in da.findings) == 3
        assert (rb.key, rb.run_state, rb.run_id) == (B, "running", "20251202-095500-1a2b")
        assert (rb.target, rb.drafter, rb.worst, rb.findings) == (
            ("5/5", "ok"),
            ("3/3", "ok"),
            None,
            0,
        )
        text_a, text_b = row(app, 0), row(app, 1)
        assert text_a.startswith("▶ 1 gpu-a") and not text_b.startswith("▶")
        assert "NONE" in text_a and "target 3/5" in text_a and "drafter 2/3" in text_a
        assert f"WARN ×{ra.worst_count}  of 4 findings" in text_a
        assert "RUNNING" in text_b and "20251202-095500-1a2b" in text_b
        assert "target 5/5" in text_b and "drafter 3/3" in text_b and "no findings" in text_b


async def test_switching_shows_each_host_and_keeps_its_state() -> None:
    seed, healthy = scenes.seed_incident(), scenes.healthy_run()
    app, _, _ = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        assert shown(app) == 0 and set(labels(app, 0)[2]) == {"busy-no-memory"}
        await pilot.press("right_square_bracket")
        assert app.selected == 1 and shown(app) == 1 and app.current.cfg.address == B
        tail_b = app.screen.query_one("#host-1").query_one(LogTail)
        received, events_b = tail_b.data.store.received, len(app.host_states[1].timeline.events)
        assert all(codes == ("ok",) for codes in labels(app, 1).values())
        header = pane_text(app, 1, RunHeader)
        assert "gpu-b" in header and "RUNNING" in header
        assert row(app, 1).startswith("▶ 2 gpu-b") and not row(app, 0).startswith("▶")
        await pilot.press("left_square_bracket")
        assert shown(app) == 0 and "gpu-a" in pane_text(app, 0, RunHeader)
        assert {i for i, c in labels(app, 0).items() if c == ("idle",)} == {0, 1, 4, 5, 6}
        await pilot.press("2")
        assert shown(app) == 1 and app.current.last is app.host_states[1].last
        await pilot.press("1")
        assert shown(app) == 0
        await pilot.click(HostOverview, offset=(6, 1))  # a click on B's row
        await until(pilot, lambda: shown(app) == 1)
        await pilot.press("1")
        # Nothing of either host was lost or redrawn from scratch by the switches.
        assert tail_b.data.store.received == received and tail_b.is_attached
        assert len(app.host_states[1].timeline.events) == events_b > 0
        tail_a = app.screen.query_one("#host-0").query_one(LogTail)
        assert tail_a.has_class("-missing")


async def test_a_hidden_host_has_no_widgets_until_shown_and_loses_nothing() -> None:
    """The pane of a host never shown is one empty container: its samples are only folded
    into its store (every GPU's sparkline point, its log lines, its timeline, its history).
    Shown, its widgets are made and draw what it received while hidden: the same header,
    findings, panels and log lines as a pane that drew every sample."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run()
    app, _, _ = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        pane_a, pane_b = app.screen.query(HostPane)
        assert shown(app) == 0 and pane_a.built and not pane_b.built
        assert not pane_b.children and len(pane_a.query("*")) > 30
        kept = pane_b.store
        points = min(len(healthy), HISTORY)  # every sample's point, as many as a sparkline draws
        assert kept.panels and all(len(p.util_hist) == points for p in kept.panels.values())
        assert not any(str(p.render()) for p in kept.panels.values())  # never drawn
        (log,) = kept.logs.values()
        assert log.store.received > 0 and kept.events and kept.history.span() is not None
        await pilot.press("2")
        assert shown(app) == 1 and pane_b.built
        grid_b = pane_b.query_one(GpuGrid)
        assert grid_b.panels is kept.panels
        tree_last = pane_b.query_one(ProcTree).last
        assert tree_last is not None and tree_last[0] is healthy[-1]
        await pilot.pause(0.15)  # one flush of the log tails
        tail = pane_b.query_one(LogTail)
        assert (
            tail.data is log
            and list(tail.log_view.lines) == list(log.store.lines)[-len(tail.log_view.lines) :]
        )
        assert len(tail.log_view.lines) == log.store.shown > 0
        drawn = {i: str(p.render()) for i, p in grid_b.panels.items()}
        findings = pane_b.query_one(FindingsList).findings
        header = pane_text(app, 1, RunHeader)
        lines = list(tail.log_view.lines)
        # The later tabs' views are made when first shown, from the same store.
        await pilot.press("e")
        await pilot.pause(0.1)
        timeline = timeline_text(pane_b)
        assert all(ev.text[:20] in timeline for ev in kept.events)
        await pilot.press("e")
        assert pane_b.history().history is kept.history
    # What a pane that drew every one of those samples shows: host B alone.
    alone = DflashApp(Config(hosts=(HostConfig(address=B),)), source=ScriptedSource(healthy))
    async with alone.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: alone.samples >= len(healthy))
        await pilot.pause(0.15)
        grid = alone.detail().query_one(GpuGrid)
        assert {i: str(p.render()) for i, p in grid.panels.items()} == drawn
        assert alone.detail().query_one(FindingsList).findings == findings
        assert str(alone.detail().query_one(RunHeader).render()) == header
        assert list(alone.detail().query_one(LogTail).log_view.lines) == lines
    assert all("ok" in text for text in drawn.values())


async def test_a_host_hidden_again_draws_nothing_and_catches_up_when_shown() -> None:
    """A host shown once, then hidden: its samples change no widget of its pane (its findings,
    GPU lines, log lines, timeline stay as they were drawn); shown again, they are current."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=12)
    app, sa, _ = two_hosts(healthy[:4], seed[:3])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 4, 3)
        pane_a = app.screen.query_one("#host-0", HostPane)
        await pilot.press("e")  # A's timeline is made (its list draws what came so far) ...
        pane_a.tabs().active = "tab-procs"  # ... and the process tree shown again
        await pilot.press("2", "c")  # B shown (its GPU lines too), then A again
        await pilot.press("1")
        await pilot.press("2")
        tail = pane_a.query_one(LogTail)
        before = (len(tail.log_view.lines), timeline_text(pane_a))
        tree = pane_a.query_one(ProcTree)
        drawn_tree = tree.last
        for snap in healthy[4:]:
            sa.push(snap)
        await until(pilot, lambda: app.host_states[0].samples == len(healthy))
        await pilot.pause(0.15)
        assert tree.last is drawn_tree  # nothing drawn while hidden
        assert (len(tail.log_view.lines), timeline_text(pane_a)) == before
        assert tail.data.store.received > 0 and tail.data.store.pending  # kept, waiting to be drawn
        await pilot.press("1")
        await pilot.pause(0.15)
        assert tree.last is not None and tree.last[0] is healthy[-1]
        assert not tail.data.store.pending and len(tail.log_view.lines) == tail.data.store.shown
        header = pane_text(app, 0, RunHeader)
        assert "RUNNING" in header


async def test_a_hidden_host_whose_link_went_down_still_says_so_when_shown() -> None:
    """Samples kept while hidden, then the link went down: shown, its findings keep the
    link-down line that show_link_down drew (catch_up does not draw them over)."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=4)
    app, _, sb = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        sb.push(Disconnected("ssh: connection to gpu-b lost", 4.0))
        await until(pilot, lambda: app.host_states[1].link == "down")
        await app.select_host(1)  # as the key does
        findings = app.screen.query_one("#host-1").query_one(FindingsList)
        assert findings.note is not None and "probe link down" in findings.note
        # The header, drawn with the latest sample on the way in, still says the link is down.
        header = pane_text(app, 1, RunHeader)
        assert "DISCONNECTED" in header and "connection to gpu-b lost" in header
        assert "RUNNING" in header
        assert findings.findings == app.host_states[1].last.diagnosis.findings  # type: ignore[union-attr]


async def test_a_host_that_is_down_shows_on_its_row_while_the_other_updates() -> None:
    seed = scenes.seed_incident(samples=16)
    healthy = scenes.healthy_run(samples=4)
    app, sa, sb = two_hosts(seed[:10], healthy[:2])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 10, 2)
        sb.push(Disconnected("ssh: connection to gpu-b lost", 4.0))
        await until(pilot, lambda: app.host_states[1].link == "down")
        text_b = row(app, 1)
        assert "DOWN" in text_b and "retry" in text_b
        assert "RUNNING" in text_b  # the last known run is still shown, marked down
        await pilot.press("2")
        header_b = pane_text(app, 1, RunHeader)
        assert "DISCONNECTED" in header_b and "connection to gpu-b lost" in header_b
        for snap in seed[10:]:  # host A keeps updating meanwhile
            sa.push(snap)
        await until(pilot, lambda: app.host_states[0].samples == 16)
        assert "connected" in row(app, 0) and "DOWN" in row(app, 1)
        sb.push(healthy[2])  # B reconnects
        await until(pilot, lambda: app.host_states[1].link == "connected")
        assert "DOWN" not in row(app, 1) and "connected" in row(app, 1)
        assert "DISCONNECTED" not in pane_text(app, 1, RunHeader)


async def test_the_overview_is_drawn_only_when_a_row_changes() -> None:
    """A sample that leaves its host's row as it was builds no overview; a link
    going down is drawn at once, and coming back too."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=4)
    app, _, sb = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        overview, b = app.screen.query_one(HostOverview), app.host_states[1]
        drawn = row_redraws(app, 1)
        row_b = summarize(b)
        assert summarize(b) is row_b  # kept while its sample and link are the same
        again = replace(healthy[-1], time=healthy[-1].time + 1)
        sb.push(again)
        await until(pilot, lambda: b.snapshot is again)
        assert drawn == [] and overview.rows[1] == summarize(b) == row_b
        sb.push(Disconnected("ssh: connection to gpu-b lost", 4.0))
        await until(pilot, lambda: b.link == "down")
        assert drawn and "DOWN" in drawn[-1]  # drawn by the LinkDown itself
        sb.push(replace(again, time=again.time + 1))
        await until(pilot, lambda: b.link == "connected")
        assert "connected" in drawn[-1] and "DOWN" not in drawn[-1]


async def test_a_burst_of_changed_rows_draws_the_overview_a_few_times_and_ends_true() -> None:
    """Samples that each change a host's row, faster than OVERVIEW_EVERY: the first is drawn at
    once, the rest together; the overview ends showing the last sample's row."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=4)
    app, _, sb = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), len(healthy))
        overview, b = app.screen.query_one(HostOverview), app.host_states[1]
        drawn = row_redraws(app, 1)
        await pilot.pause(OVERVIEW_EVERY)  # a quiet spell: the next change is drawn at once
        t0, rows = time.monotonic(), set()
        for i in range(12):  # the incident's samples and the healthy run's, in turn
            snap = replace((seed if i % 2 else healthy)[-1], time=healthy[-1].time + 1 + i)
            sb.push(snap)
            await until(pilot, lambda snap=snap: b.snapshot is snap)
            rows.add(summarize(b))
        took = time.monotonic() - t0
        assert len(rows) == 2  # every sample changed the row
        assert 1 <= len(drawn) <= 2 + took / OVERVIEW_EVERY
        await pilot.pause(2 * OVERVIEW_EVERY)
        assert overview.rows[1] == summarize(b) and drawn[-1] == row(app, 1)


async def test_a_silent_host_never_stalls_the_others() -> None:
    seed = scenes.seed_incident()
    app, _, _ = two_hosts(seed, [])  # host B never answers (a hanging connect)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), 0)
        assert "connecting" in row(app, 1) and "?/?" in row(app, 1)
        await pilot.press("2")
        assert "connecting" in pane_text(app, 1, RunHeader)
        await pilot.press("k")  # nothing known about B's run: nothing to kill
        assert not isinstance(app.screen, ConfirmScreen)


async def test_host_keys_in_footer_help_and_palette() -> None:
    app, _, _ = two_hosts(scenes.seed_incident(samples=1), scenes.healthy_run(samples=1))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1, 1)
        active = {b.binding.action: b.binding for b in app.screen.active_bindings.values()}
        assert active["app.next_host"].show and active["app.next_host"].key_display == "[ ]"
        assert {"app.prev_host", "app.show_host(0)", "app.show_host(8)"} <= set(active)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Next host", "Previous host", f"Show host {A}", f"Show host {B}"} <= titles
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_text = str(app.screen.query_one("#help-body").render())
        assert "[ / ]" in help_text and "1-9" in help_text


async def test_one_host_has_no_host_keys() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.seed_incident(samples=1)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        assert not app.screen.query(HostOverview)
        assert app.check_action("next_host", ()) is False
        active = {b.binding.action for b in app.screen.active_bindings.values()}
        assert "app.next_host" not in active and "app.show_host(1)" not in active
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert "Next host" not in titles


# -- two real local hosts: keys act on the shown host only --

JOB = 'i=0; while :; do i=$((i+1)); echo "step=$i loss=2.$i tok/s=28$i"; sleep 0.1; done'


@pytest.fixture
async def local_hosts(tmp_path: Path) -> AsyncIterator[tuple[HostConfig, HostConfig]]:
    hosts = tuple(HostConfig(command=JOB, run_root=str(tmp_path / n / "runs")) for n in "ab")
    yield hosts  # type: ignore[misc]
    for h in hosts:  # whatever a test left alive goes, through control
        transport = make_transport(h)
        try:
            await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
        finally:
            await transport.close()


def run_dirs(h: HostConfig) -> list[str]:
    root = Path(h.run_root)
    return (
        sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
        if root.exists()
        else []
    )


async def test_launch_and_kill_act_on_the_shown_host_only(
    local_hosts: tuple[HostConfig, HostConfig],
) -> None:
    ha, hb = local_hosts
    app = DflashApp(Config(hosts=(ha, hb), interval=0.5))
    a, b = app.host_states
    assert (a.key, b.key) == ("local", "local#2")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: a.samples >= 1 and b.samples >= 1)
        await pilot.press("2")
        await pilot.press("l")
        running = lambda: b.diagnosis is not None and b.diagnosis.run_state == "running"  # noqa: E731
        await until(pilot, running)
        assert len(run_dirs(hb)) == 1 and run_dirs(ha) == []
        assert a.diagnosis is not None and a.diagnosis.run_state == "none"
        assert "RUNNING" in row(app, 1) and "NONE" in row(app, 0)
        await until(pilot, lambda: not app.control.waits_active())  # the launch action has ended
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.title_text.endswith("on local#2?")  # type: ignore[attr-defined]
        await pilot.press("y")
        await until(pilot, lambda: b.diagnosis is not None and b.diagnosis.run_state == "killed")
        assert run_dirs(ha) == []


async def test_overview_rows_say_unread_gpus_in_the_headers_words(
    local_hosts: tuple[HostConfig, HostConfig], fake_smi: FakeSmi
) -> None:
    """Two real local hosts whose GPU tool fails (the stand-in nvidia-smi exits 9): no GPU was
    read, and the overview's rows say ``?/5 unread`` and ``?/3 unread``, the header's and
    ``status``'s words, never ``0/5`` as if five GPUs were read and found unfit."""
    fake_smi.raw(b"", rc=9)
    app = DflashApp(Config(hosts=local_hosts, interval=0.5))
    a, b = app.host_states
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: a.samples >= 1 and b.samples >= 1)
        await pilot.pause(0.2)
        header = str(app.screen.query_one(RunHeader).render())
        rows = [row(app, i) for i in (0, 1)]
    for text in [*rows, header]:
        assert "target ?/5 unread" in text and "drafter ?/3 unread" in text, text
        assert "0/5" not in text, text


# -- the two-host screen --


@pytest.fixture
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # the timeline prints local clock times
    time.tzset()


@pytest.mark.usefixtures("_utc")
def test_two_host_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    seed, healthy = scenes.seed_incident(), scenes.healthy_run()
    app, _, _ = two_hosts(seed, healthy, theme="dflash-dark")

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot, app, len(seed), len(healthy))
        await pilot.pause(0.3)  # log flush + the Log's width worker
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_keys_and_focus_act_on_a_pane_made_when_first_shown() -> None:
    """The first key after switching to a host never shown reaches its new widgets: tab
    moves the focus into them (not into the hidden pane), e shows its next tab, c makes its
    grid compact, a shows all its log lines (and the store keeps that for a later log)."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=4)
    app, _, _ = two_hosts(seed, healthy)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(seed), 4)
        pane_a, pane_b = app.screen.query(HostPane)
        assert not pane_b.built
        await pilot.press("2", "tab")
        assert pane_b.built and app.focused is not None and pane_b in app.focused.ancestors
        await pilot.press("e")
        assert pane_b.tabs().active == "tab-timeline" and pane_a.tabs().active == "tab-procs"
        await pilot.press("c")
        assert pane_b.grid().compact and not pane_a.grid().compact
        filtered = pane_b.logs().filter_on
        await pilot.press("a")
        assert pane_b.logs().filter_on is not filtered and pane_a.logs().filter_on
        assert pane_b.store.log_pattern is None and pane_a.store.log_pattern is not None
        await pilot.press("1", "2")  # away and back: what the keys set is as it was
        assert pane_b.tabs().active == "tab-timeline" and pane_b.grid().compact
        assert shown(app) == 1 and app.current is app.host_states[1]


async def test_a_host_first_shown_draws_the_findings_it_received_while_hidden() -> None:
    """Host B's incident arrives while A is shown: switched to, B's new pane lists B's latest
    findings, on screen, and its grid labels B's GPUs as the latest sample does."""
    seed, healthy = scenes.seed_incident(), scenes.healthy_run(samples=4)
    app, _, _ = two_hosts(healthy, seed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(healthy), len(seed))
        latest = app.host_states[1].diagnosis
        assert latest is not None and latest.findings
        await pilot.press("2")
        await pilot.pause(0.1)
        pane_b = app.screen.query_one("#host-1", HostPane)
        assert pane_b.query_one(FindingsList).findings == latest.findings
        text = str(pane_b.query_one(FindingsList).query_one(".body", RowStatic).render())
        assert all(f.message[:30] in text for f in latest.findings)
        assert labels(app, 1) == {v.index: v.codes for v in latest.gpus}
