"""Focus and navigation: the focused area shows it; a finding that names a
process or GPUs is entered to select that process in the tree (so ``K`` on an orphan is two
keys) or to show those GPUs; the tree shows the run's processes and GPU holders, ``w`` the
whole machine; ``l`` in the tree expands a node, and launching beside GPU holders that are not
ours asks first."""

from __future__ import annotations

from typing import Any

from fakes.rows import gpu_row as gpu
from fakes.rows import proc_row as proc
from support import pick_signal, screen_text, until
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.logs.widget import TailLog
from dflash_tui.app.host.procs.tree import ProcTree
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

T0 = 1_764_669_600.0
ORPHAN, FOREIGN = 777, 900


class Recorder:
    """A stand-in run control that records what it was asked to do."""

    grace = 10.0

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def launch(self, step: Any) -> str:
        self.calls.append("launch")
        return "launched"


def machine() -> Snapshot:
    """No run of ours; an orphan (reparented to init) holds GPU 6, another user's job GPU 1;
    twenty unrelated processes."""
    procs = [proc(1, 0, cmd="init"), proc(50, 1, cmd="sshd")]
    procs += [proc(100 + i, 1, cmd=f"daemon-{i}") for i in range(20)]
    procs += [proc(ORPHAN, 1, cmd="python3 worker.py"), proc(FOREIGN, 50, cmd="python3 other.py")]
    gpus = [gpu(i, 70_000 if i in (1, 6) else 0, 90 if i in (1, 6) else 0) for i in range(8)]
    holders = [
        {"pid": ORPHAN, "gpu_uuid": "GPU-6", "used_mib": 70_000, "name": "python3"},
        {"pid": FOREIGN, "gpu_uuid": "GPU-1", "used_mib": 70_000, "name": "python3"},
    ]
    return Snapshot.from_dict(
        {
            "time": T0,
            "host": "box",
            "telemetry": {"source": "nvidia-smi"},
            "gpus": gpus,
            "gpu_procs": holders,
            "procs": procs,
            "logs": [],
            "run": None,
        }
    )


async def started(pilot: Pilot, app: DflashApp) -> None:
    await until(pilot, lambda: app.samples >= 1)
    await pilot.pause(0.2)


def findings(app: DflashApp) -> FindingsList:
    return app.screen.query_one(FindingsList)


async def enter_finding(pilot: Pilot, app: DflashApp, code: str) -> None:
    fl = findings(app)
    fl.focus()
    await pilot.pause()
    assert fl.findings is not None
    codes = [f.code for f in fl.findings]
    for _ in range(codes.index(code)):
        await pilot.press("down")
    assert "▶" in str(fl.query_one(".body").render())  # the picked finding is marked
    await pilot.press("enter")
    await pilot.pause(0.2)


async def test_an_orphan_finding_then_K_is_two_keys() -> None:
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([machine()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot, app)
        await enter_finding(pilot, app, "orphan-process")
        tree = app.screen.query_one(ProcTree)
        assert app.focused is tree
        assert app.screen.query_one("#right-tabs", TabbedContent).active == "tab-procs"
        info = tree.selected()
        assert info is not None and info.pid == ORPHAN, info
        await pilot.press("K")
        await pick_signal(pilot, app, "TERM")
        assert f"Kill process {ORPHAN}" in str(app.screen.query_one(".title").render())


async def test_a_finding_that_names_gpus_shows_them() -> None:
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([machine()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot, app)
        await enter_finding(pilot, app, "idle")
        grid = app.screen.query_one(GpuGrid)
        assert app.focused is grid
        picked = sorted(i for i, p in grid.panels.items() if p.picked)
        idle = next(f for f in findings(app).findings or () if f.code == "idle")
        assert picked == sorted(idle.gpus) and picked
        # On the screen: the picked boxes double-lined and in sight, the others not.
        await pilot.pause(0.1)
        rows = screen_text(app).splitlines()
        for i in grid.panels:
            box = grid.region_of(i)
            assert box is not None
            corner = (
                rows[box.y][box.x] if grid.scrollable_content_region.contains_region(box) else ""
            )
            assert (corner == "╔") == (i in picked), (i, corner)


async def test_the_tree_shows_what_matters_and_w_the_whole_machine() -> None:
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource([machine()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot, app)
        tree = app.screen.query_one(ProcTree)
        assert set(tree.nodes) == {1, 50, ORPHAN, FOREIGN}  # holders and the way to them
        tree.focus()
        await pilot.pause()
        footer = [k.description for k in app.screen.query("FooterKey")]  # type: ignore[attr-defined]
        assert "Whole machine" in footer, footer  # the tree's key, shown while it has the focus
        await pilot.press("w")
        await pilot.pause(0.1)
        assert len(tree.nodes) == 24 and 105 in tree.nodes
        assert (
            "all"
            in app.screen.query_one("#right-tabs", TabbedContent).get_tab("tab-procs").label_text
        )
        await pilot.press("w")
        await pilot.pause(0.1)
        assert 105 not in tree.nodes


async def test_l_in_the_tree_expands_and_a_launch_beside_foreign_holders_asks() -> None:
    rec = Recorder()
    cfg = Config(hosts=(HostConfig(),))
    app = DflashApp(cfg, source=ScriptedSource([machine()]), control=rec)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(pilot, app)
        tree = app.screen.query_one(ProcTree)
        tree.focus()
        await pilot.press("l")  # navigating: no launch, no dialog
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen) and rec.calls == []
        app.screen.query_one(GpuGrid).focus()
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#confirm-body").render())
        assert f"PID {ORPHAN}" in body and f"PID {FOREIGN}" in body and "not ours" in body
        assert rec.calls == []
        await pilot.press("y")
        await until(pilot, lambda: rec.calls == ["launch"])


async def test_the_focused_area_is_marked() -> None:
    """What is drawn, not only the styles: the cell that marks each area (the grid's and the
    lists' left column, the log's title bar) is drawn otherwise while that area has the focus.
    The grid's panels covered its mark, and the log's title bar never changed."""
    snaps = scenes.seed_incident()  # a log pane, findings, GPUs and a tree
    app = DflashApp(Config(hosts=(HostConfig(),)), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        screen = app.screen
        grid, tree, found = screen.query_one(GpuGrid), screen.query_one(ProcTree), findings(app)
        log = screen.query_one(TailLog)
        title = screen.query_one(LogTail).title_bar
        marks = {  # each area, and the cell that shows its focus
            "grid": (grid, (grid.region.x, grid.region.y + 1)),
            "findings": (found, (found.region.x, found.region.y + 1)),
            "tree": (tree, (tree.region.x, tree.region.y)),
            "log": (log, (title.region.x + 1, title.region.y)),
        }

        def drawn(cell: tuple[int, int]) -> tuple[object, object]:
            style = screen.get_style_at(*cell)
            return style.color, style.bgcolor

        for name, (widget, cell) in marks.items():
            other = tree if widget is not tree else grid
            other.focus()
            await pilot.pause(0.1)
            blurred = drawn(cell)
            widget.focus()
            await pilot.pause(0.1)
            assert app.focused is widget
            assert drawn(cell) != blurred, (name, cell, blurred)
