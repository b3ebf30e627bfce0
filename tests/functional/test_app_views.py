"""The GPU views: the grid that fits (compact lines, even columns, never 6 + 2),
zoom (``+``), and the GPU process table (``p``: sort, filter, tag, ``K`` on several)."""

from __future__ import annotations

import dataclasses
import subprocess

from support import pick_signal, screen_text, until
from textual.pilot import Pilot

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.gpus.fit import PANEL_W, columns_for, fit_grid
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.logs.widget import TailLog
from dflash_tui.app.host.procs.gpu_table import GpuProcView
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

SMALL, MEDIUM = (80, 24), (120, 40)


def many_gpus(n: int, samples: int = 2) -> list[Snapshot]:
    out = []
    for snap in scenes.seed_incident(samples=samples):
        gpu = snap.gpus[0]
        gpus = tuple(dataclasses.replace(gpu, index=i, uuid=f"GPU-{i:04d}") for i in range(n))
        out.append(dataclasses.replace(snap, gpus=gpus))
    return out


async def settle(pilot: Pilot, app: DflashApp, n: int) -> None:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.3)


# -- the pure layout --


def test_eight_gpus_are_never_six_plus_two() -> None:
    for width in range(29, 400):
        fit = fit_grid(8, width, 60)
        assert fit.columns in (1, 2, 4, 8), (width, fit)
        assert fit.columns * fit.column_width <= width, (width, fit)
    assert fit_grid(8, 200, 60).columns == 4  # 4 + 4, not 6 + 2
    assert fit_grid(8, 240, 60).columns == 8
    assert fit_grid(8, 120, 39) == fit_grid(8, 120, 39, compact=False)
    assert not fit_grid(8, 120, 39).compact and fit_grid(8, 120, 39).column_width == 30


def test_compact_when_eight_panels_do_not_fit() -> None:
    assert fit_grid(8, 80, 23).compact  # 80x24: four rows of two panels do not fit
    assert fit_grid(8, 120, 20).compact  # too low for two rows of panels
    assert not fit_grid(8, 80, 23, compact=False).compact  # the key overrides
    assert fit_grid(8, 200, 60, compact=True).compact
    small = fit_grid(8, 80, 23)
    assert small.visible_rows == 8 and small.height == 8  # all eight lines in sight


def test_scrolling_grids_keep_every_column_the_same_width() -> None:
    for count in (16, 64):
        fit = fit_grid(count, 120, 39)
        assert fit.columns == 4 and fit.visible_rows == 2
        # the scrollbar's column is taken before the split: 4 x 29 + 1 <= 120
        assert fit.column_width == PANEL_W and fit.columns * fit.column_width + 1 <= 120
    assert columns_for(7, 4) == 4 and columns_for(6, 4) == 3 and columns_for(1, 8) == 1


# -- the app --


async def test_compact_mode_at_80x24_shows_every_gpu_on_its_line() -> None:
    snaps = scenes.seed_incident()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, len(snaps))
        grid = app.screen.query_one(GpuGrid)
        assert grid.compact and grid.has_class("-compact")
        viewport = grid.scrollable_content_region
        for i, line in grid.lines.items():
            assert viewport.contains_region(line.region), i
        text = screen_text(app)
        row7 = next(x for x in text.splitlines() if x[1:].startswith(" 7 drafter"))  # after the bar
        assert "util █████ 100%" in row7 and "busy-no-memory >= 6m " in row7, row7
        assert "58°C 612W" in row7
        header = str(app.screen.query_one(RunHeader).render()).split("\n")[1]
        assert "off-screen" not in header and "↓" not in header  # all eight are in sight
        await pilot.press("c")  # full panels: GPU 7 goes below, and the header says so
        await until(pilot, lambda: not grid.compact)
        await until(pilot, lambda: "↓" in str(app.screen.query_one(RunHeader).render()))
        assert not viewport.contains_region(grid.region_of(7))
        await pilot.press("c")
        await until(pilot, lambda: grid.compact)


def assert_boxes_drawn(app: DflashApp, grid: GpuGrid) -> None:
    """Every panel in sight is on the screen as its rows say, PANEL_W wide, whole."""
    rows = screen_text(app).splitlines()
    viewport = grid.scrollable_content_region
    seen = 0
    for index, panel in grid.panels.items():
        box = grid.region_of(index)
        assert box is not None and box.width == PANEL_W
        if viewport.contains_region(box):
            seen += 1
            drawn = [r[box.x : box.right] for r in rows[box.y : box.bottom]]
            assert drawn == [t.plain for t in panel.shown], index
            assert drawn[1].startswith("│ util") and drawn[0].startswith("╭─ GPU ")
    assert seen == 8, seen  # two rows of four in sight


async def test_sixteen_gpus_scroll_with_equal_panels_and_unwrapped_sparklines() -> None:
    snaps = many_gpus(16)
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot, app, len(snaps))
        grid = app.screen.query_one(GpuGrid)
        assert grid.max_scroll_y > 0
        assert_boxes_drawn(app, grid)
        meters = [x for x in screen_text(app).splitlines() if "│ util" in x]
        assert meters and all(x.count("│ util") == 4 for x in meters), meters  # 4 per row
        grid.scroll_end(animate=False)
        await pilot.pause(0.2)
        # The last row of panels is in sight now, drawn whole.
        assert grid.scrollable_content_region.contains_region(grid.region_of(15))
        assert_boxes_drawn(app, grid)


async def test_plus_zooms_the_focused_log_and_back() -> None:
    snaps = scenes.healthy_run()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot, app, len(snaps))
        pane = app.detail()
        tail = pane.query_one(LogTail)
        tail.query_one(TailLog).focus()
        await pilot.press("plus")
        await pilot.pause(0.2)
        assert pane.zoom.area is tail
        assert tail.region.width == MEDIUM[0] and tail.region.height >= 30, tail.region
        assert pane.grid().region.area == 0 and pane.query_one(RunHeader).region.area == 0
        await pilot.press("plus")
        await pilot.pause(0.2)
        assert not pane.zoom.on and pane.grid().region.height == 14
        assert tail.region.width < MEDIUM[0]


async def test_plus_zooms_the_tree_and_the_findings() -> None:
    snaps = scenes.healthy_run(samples=2)
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot, app, len(snaps))
        pane = app.detail()
        for area in (pane.procs(), pane.query_one("#findings")):
            area.focus()
            await pilot.press("plus")
            await pilot.pause(0.2)
            assert pane.zoom.area is area and area.region.width >= MEDIUM[0] - 2, area.region
            await pilot.press("plus")
            await pilot.pause(0.1)
            assert not pane.zoom.on


async def test_gpu_process_table_sorts_filters_and_shows_what_is_known() -> None:
    snaps = scenes.gpu_processes()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot, app, len(snaps))
        await pilot.press("p")
        view = app.detail().query_one(GpuProcView)
        await until(pilot, lambda: app.focused is view.table)
        assert len(view.shown) == 10  # the run on 8 GPUs, the orphan, alice's job
        text = screen_text(app)
        alice = next(x for x in text.splitlines() if "alice" in x)
        assert "7100" in alice and "20.0 GiB" in alice and "97.0" in alice, alice
        diag = app.current.diagnosis
        assert diag is not None
        owner = next(p.owner for v in diag.gpus for p in v.processes if p.pid == 7100)
        assert "5.9 GiB" in alice and f" {owner} " in alice and "eval.py" in alice, alice
        assert "23h" in alice  # elapsed from its start ticks and the boot time
        await pilot.press("o")  # from GPU to the next column: GPU memory, ascending
        assert view.sort_by == "mem" and not view.reverse
        mem = [r.used_mib for r in view.shown]
        assert mem == sorted(mem), mem
        x = view.table.columns["mem"]  # type: ignore[index]
        at = sum(c.get_render_width(view.table) for c in view.table.ordered_columns[:3])
        assert x.label.plain.startswith("GPU MEM")
        await pilot.click("#gpu-proc-table", offset=(at + 1, 0))  # its header: reversed
        await until(pilot, lambda: view.reverse)
        mem = [r.used_mib for r in view.shown]
        assert view.sort_by == "mem" and mem == sorted(mem, reverse=True), mem
        assert view.shown[0].pid == 6600  # the orphan's 71000 MiB first
        await pilot.press("slash")
        await pilot.press(*"alice", "enter")
        await until(pilot, lambda: len(view.shown) == 1)
        assert view.shown[0].pid == 7100 and app.focused is view.table


async def test_tagged_rows_are_killed_after_one_confirm_naming_every_pid() -> None:
    snaps = scenes.gpu_processes()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=MEDIUM) as pilot:
        await settle(pilot, app, len(snaps))
        await pilot.press("p")
        view = app.detail().query_one(GpuProcView)
        await until(pilot, lambda: app.focused is view.table)
        pids = []
        for _ in range(2):  # the orphan and alice's job, whatever the order
            row = view.cursor_row()
            while row is not None and row.pid == 4243:
                await pilot.press("down")
                row = view.cursor_row()
            assert row is not None
            pids.append(row.pid)
            await pilot.press("space")
        assert view.tagged == {6600, 7100}, view.tagged
        await pilot.press("K")
        await pick_signal(pilot, app, "TERM")
        body = str(app.screen.query_one("#confirm-body").render())
        assert "Kill 2 processes" in app.screen.title_text
        for pid in (6600, 7100):
            assert str(pid) in body
        assert "start time" in body and "alice" in body


async def test_tagged_gpu_processes_are_really_killed(fake_smi, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Real processes, the real probe and control: two sleeps the stand-in nvidia-smi reports
    on GPUs 1 and 2; `p`, tag both with space, `K`, `y`: both get SIGTERM, one confirm."""
    from fakes.scenario import app as smi_app
    from fakes.scenario import box

    victims = [subprocess.Popen(["sleep", "300"], start_new_session=True) for _ in range(2)]
    try:
        fake_smi.write(box(8), [smi_app(v.pid, gpu=i + 1) for i, v in enumerate(victims)])
        host = HostConfig(run_root=str(tmp_path / "runs"))
        app = DflashApp(Config(hosts=(host,), interval=0.5))
        async with app.run_test(size=MEDIUM) as pilot:
            await pilot.press("p")
            view = app.detail().query_one(GpuProcView)
            pids = {v.pid for v in victims}
            await until(pilot, lambda: {r.pid for r in view.shown} >= pids)
            await until(pilot, lambda: app.focused is view.table)
            while len(view.tagged) < 2:
                row = view.cursor_row()
                assert row is not None
                if row.pid in pids:
                    await pilot.press("space")
                else:
                    await pilot.press("down")
            await pilot.press("K")
            await pick_signal(pilot, app, "TERM")
            assert isinstance(app.screen, ConfirmScreen)
            body = str(app.screen.query_one("#confirm-body").render())
            assert all(str(p) in body for p in pids), body
            await pilot.press("y")
            await until(pilot, lambda: all(v.poll() is not None for v in victims), timeout=30)
        assert [v.returncode for v in victims] == [-15, -15]
    finally:
        for v in victims:
            if v.poll() is None:
                v.kill()
            v.wait()
