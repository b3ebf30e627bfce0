"""The app fed scripted samples (no probe, no clock): seed screen, read-only mode, hostile log
content, a 100,000-line flood, filter/follow, themes, the process tree's in-place updates."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support import until
from textual import events
from textual.pilot import Pilot

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.logs.lines import MAX_LINES
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.keys.table import app_action
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)


def make_app(snaps: list[Snapshot], **cfg: object) -> tuple[DflashApp, ScriptedSource]:
    source = ScriptedSource(snaps)
    return DflashApp(Config(**cfg), source=source), source  # type: ignore[arg-type]


async def settle(pilot: Pilot, app: DflashApp, n: int) -> None:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.15)  # one flush of the log tails


def log_snap(t: float, lines: list[str], path: str = "/w/out.log") -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "telemetry": {"source": "none", "error": "no NVML and no nvidia-smi on PATH"},
            "procs": [{"pid": 1, "ppid": 0, "cmd": "init", "state": "S"}],
            "logs": [{"path": path, "exists": True, "size": 1, "lines": lines}],
        }
    )


async def test_seed_screen_labels_missing_log_and_findings() -> None:
    snaps = scenes.seed_incident()
    app, _ = make_app(snaps)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(snaps))
        grid = app.screen.query_one(GpuGrid)
        codes = {i: p.view.codes for i, p in grid.panels.items() if p.view}
        assert {i for i, c in codes.items() if c == ("busy-no-memory",)} == {2, 3, 7}
        assert {i for i, c in codes.items() if c == ("idle",)} == {0, 1, 4, 5, 6}
        # Chips carry the code and how long it held (6 minutes: past the diagnosis window),
        # at least: it already held at the first sample.
        panel_text = str(grid.panels[2].render())
        assert "busy-no-memory >= 6m " in panel_text
        tail = app.screen.query_one(LogTail)
        assert tail.has_class("-missing")
        missing = str(tail.query_one(".tail-missing").render())
        assert "does not exist (missing for at least 6m00s)" in missing
        findings = {f.code: f.message for f in app.current.last.diagnosis.findings}  # type: ignore[union-attr]
        assert "does not exist" in findings["log-missing"]
        assert "GPUs 2, 3, 7" in findings["busy-no-memory"]
        shown = str(app.screen.query_one("#findings .body").render())
        assert "log-missing" in shown and "busy-no-memory" in shown


async def test_read_only_hides_every_destructive_action() -> None:
    snaps = scenes.healthy_run(samples=2)
    app, _ = make_app(snaps, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 2)
        active = {b.binding.action for b in app.screen.active_bindings.values()}
        for action in ("launch", "kill", "restart", "kill_process"):
            assert app_action(action) not in active
        assert "app.follow" in active and "app.quit" in active
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert not titles & {"Launch", "Kill", "Restart", "Kill process"}
        assert "Follow" in titles
        for key in ("l", "k", "r", "K"):
            await pilot.press(key)
            await pilot.pause(0.05)
            assert not isinstance(app.screen, ConfirmScreen)
        assert not app.control.waits_active()
        await pilot.press("question_mark")
        await pilot.pause(0.05)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-body").render())
        assert "launch the run" not in text and "Read-only mode" in text


async def test_normal_mode_lists_actions_in_footer_and_palette() -> None:
    app, _ = make_app(scenes.healthy_run(samples=1))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        shown = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"l", "k", "r", "K", "slash", "f", "tab", "t", "question_mark", "q"} <= shown
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Launch", "Kill", "Restart", "Kill process", "Filter", "Follow"} <= titles
        await pilot.press("k")  # the healthy scene's run is alive: the dialog names its PIDs
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#confirm-body").render())
        assert "4242" in body and "4243" in body and "4250" in body
        assert "GPUs held: GPU 0, GPU 1" in body
        await pilot.press("n")
        await pilot.pause(0.05)
        assert not isinstance(app.screen, ConfirmScreen)


HOSTILE = [
    "\x1b[31mred\x1b[0m plain",
    "\x1b]0;evil title\x07after osc",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "[bold red]not markup[/]",
    "nul\x00byte",
    "bad \udcff utf8 \ufffd",
    "c1 \x9b31m csi",
    "progress 10%\rprogress 50%\rprogress 100%",
    "bell\x07 and backspace\x08",
    "x" * (10 * 1024 * 1024),
]


async def test_hostile_log_content_is_shown_safely() -> None:
    app, _ = make_app([log_snap(1.0, HOSTILE)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        await pilot.press("a")  # all lines, not only the filtered ones
        await pilot.pause(0.15)
        lines = list(app.screen.query_one(LogTail).log_view.lines)
        joined = "\n".join(lines[:-1])
        for bad in ("\x1b", "\x00", "\x07", "\x08", "\x9b", "\r", "\udcff"):
            assert bad not in "".join(lines)
        assert "red plain" in joined and "after osc" in joined and "link" in joined
        assert "[bold red]not markup[/]" in joined  # shown literally, never parsed
        assert "progress 100%" in joined and "progress 10%" not in joined
        assert len(lines[-1]) < 5000 and "more characters not shown" in lines[-1]
        app.save_screenshot(path=str(Path("/tmp")), filename="hostile.svg")  # renders, no crash


async def test_flood_of_100k_lines_stays_bounded_and_responsive() -> None:
    app, source = make_app([log_snap(0.0, ["start"])])
    per, batches = 2000, 50  # 100,000 lines in 50 samples
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        area = app.screen.query_one(LogArea)
        t0 = time.monotonic()
        for b in range(batches):
            lines = [f"step={b * per + i} loss=1.0 tok/s=2.8K" for i in range(per)]
            source.push(log_snap(1.0 + b, lines))
        waits = []
        while app.samples < batches + 1 and time.monotonic() - t0 < 30:
            before, t = area.follow, time.monotonic()
            app.post_message(events.Key("f", "f"))  # a key arriving mid-flood ...
            while area.follow is before and time.monotonic() - t < 5:
                await asyncio.sleep(0.005)
            waits.append(time.monotonic() - t)  # ... is answered within a frame or so
        elapsed = time.monotonic() - t0
        await pilot.pause(0.2)
        tail = app.screen.query_one(LogTail)
        assert waits and max(waits) < 1.0, f"keys waited {max(waits):.2f}s during the flood"
        assert elapsed < 20, f"the flood took {elapsed:.1f}s"
        assert tail.data.store.received == 100_001
        assert len(tail.data.store.lines) <= MAX_LINES
        assert len(tail.data.store.pending) == 0
        assert tail.log_view.line_count <= MAX_LINES
        assert len(app.current.tracker.metrics) <= 600
        assert len(app.current.timeline.events) <= 200
        assert tail.data.store.lines[-1] == f"step={100_000 - 1} loss=1.0 tok/s=2.8K"


async def test_filter_and_follow_keys() -> None:
    lines = ["noise one", "step=1 loss=2.0", "RuntimeError: boom", "noise two"]
    app, _ = make_app([log_snap(1.0, lines)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        log = app.screen.query_one(LogTail).log_view
        assert list(log.lines) == ["step=1 loss=2.0", "RuntimeError: boom"]  # default filter
        await pilot.press("a")
        await pilot.pause(0.05)
        assert list(log.lines) == lines
        await pilot.press("slash")
        await pilot.pause(0.05)
        box = app.screen.query_one("#log-filter")
        assert box.has_focus
        box.value = "noise"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert list(log.lines) == ["noise one", "noise two"]
        await pilot.press("slash")
        box.value = "(unclosed"  # type: ignore[attr-defined]
        await pilot.press("enter")  # a bad regex is reported, the filter stays
        await pilot.pause(0.1)
        assert list(log.lines) == ["noise one", "noise two"]
        await pilot.press("escape")
        await pilot.press("f")
        assert app.screen.query_one(LogTail).follow is False


async def test_theme_key_cycles_and_bad_user_theme_is_a_notification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    themes = tmp_path / "dflash-tui" / "themes"
    themes.mkdir(parents=True)
    (themes / "mine.toml").write_text('name = "mine"\nprimary = "#ff00ff"\ndark = false\n')
    (themes / "broken.toml").write_text('name = "broken"\nprimary = "not-a-colour"\n')
    (themes / "garbage.toml").write_text("name = [\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app, _ = make_app(scenes.healthy_run(samples=1), theme="dflash-light")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        assert app.theme == "dflash-light"
        assert "mine" in app.available_themes
        assert len(app.app_themes.errors) == 2
        assert {n.title for n in app._notifications} == {"theme"}
        seen = []
        for _ in range(4):
            await pilot.press("t")
            seen.append(app.theme)
        assert seen == ["dflash-contrast", "mine", "dflash-dark", "dflash-light"]


async def test_unknown_theme_falls_back() -> None:
    app, _ = make_app(scenes.healthy_run(samples=1), theme="nope")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        assert app.theme == "dflash-dark"
        assert any("nope" in e for e in app.app_themes.errors)


async def test_process_tree_updates_in_place_and_keeps_expansion() -> None:
    snaps = scenes.healthy_run(samples=1)
    first = snaps[0]
    # The next sample: a new child of the run, the zombie gone, one label changed.
    procs = [p for p in first.procs if p.pid != 5000]
    procs.append(replace(procs[-1], pid=4251, cmd="python3 worker 2", state="S"))
    second = replace(first, time=first.time + 5, procs=tuple(procs))
    app, source = make_app([first])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 1)
        tree = app.screen.query_one(ProcTree)
        assert 210 not in tree.nodes  # the run's processes and GPU holders first
        await pilot.press("w")  # the whole machine
        await pilot.pause(0.1)
        sshd = tree.nodes[210]
        node_4243 = tree.nodes[4243]
        assert tree.nodes[4250].data.in_run and tree.nodes[4243].data.gpus == tuple(range(8))
        sshd.expand()  # the user opens sshd, collapses the run's python
        node_4243.collapse()
        source.push(second)
        await settle(pilot, app, 2)
        assert 5000 not in tree.nodes and 4251 in tree.nodes
        assert tree.nodes[210] is sshd and sshd.is_expanded
        assert tree.nodes[4243] is node_4243 and not node_4243.is_expanded
        assert tree.nodes[4251].parent is node_4243


async def test_crash_raises_a_notification_and_timeline_entry() -> None:
    alive = scenes.healthy_run(samples=2)
    last = alive[-1]
    assert last.run is not None
    dead_run = replace(last.run, exit_code=137, ended_at=last.time + 4)
    dead = replace(last, time=last.time + 5, run=dead_run, procs=last.procs[:4], gpu_procs=())
    app, _ = make_app([*alive, dead])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, 3)
        assert app.current.last.diagnosis.run_state == "killed"  # type: ignore[union-attr]
        notes = [(n.title, str(n.message)) for n in app._notifications]
        assert (
            "run crashed",
            "crashed: exit 137: SIGKILL (often the kernel's OOM killer, or a kill -9)",
        ) in notes
        await pilot.press("e")  # the timeline tab
        await pilot.pause(0.05)
        text = str(app.screen.query_one("#timeline .body").render())
        assert "crash" in text and "exit 137" in text
