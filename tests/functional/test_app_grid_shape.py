"""The GPU grid shows every GPU it has as a whole panel, whatever their count: one GPU (a
one-GPU host, ``--topology 0:``) has the shape of no GPUs at all, and the grid's height must
still follow the panels, not stay the one row of "waiting for the first sample"."""

from __future__ import annotations

import dataclasses
import math

import pytest
from support import screen_text, until
from textual.pilot import Pilot

from dflash_train.topology import Topology
from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.gpus.fit import PANEL_H
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)


def with_gpus(snaps: list[Snapshot], n: int) -> list[Snapshot]:
    """The healthy scene on a host with GPUs 0..n-1 only (their processes kept)."""
    return [
        dataclasses.replace(
            s,
            gpus=tuple(g for g in s.gpus if g.index < n),
            gpu_procs=tuple(p for p in s.gpu_procs if p.gpu_uuid in kept(s, n)),
        )
        for s in snaps
    ]


def kept(snap: Snapshot, n: int) -> set[str | None]:
    return {g.uuid for g in snap.gpus if g.index < n}


async def settle(pilot: Pilot, app: DflashApp, n: int) -> None:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.2)


@pytest.mark.parametrize(("count", "spec"), [(1, "0:"), (2, "0:1"), (5, "0-2:3-4"), (8, None)])
async def test_every_gpu_of_the_first_rows_is_a_whole_panel_in_sight(
    count: int, spec: str | None
) -> None:
    snaps = with_gpus(scenes.healthy_run(samples=3), count)
    cfg = Config(hosts=(HostConfig(topology=Topology.parse(spec)),)) if spec else Config()
    app = DflashApp(cfg, source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(snaps))
        grid = app.screen.query_one(GpuGrid)
        assert sorted(grid.panels) == list(range(count))
        fit = grid.fit
        assert not fit.compact
        rows = math.ceil(count / fit.columns)
        assert fit.visible_rows == rows  # eight GPUs or fewer: every row in sight at 120x40
        assert grid.region.height == PANEL_H * rows
        for index, panel in grid.panels.items():
            region = grid.region_of(index)
            assert region is not None and region.height == PANEL_H
            assert grid.region.contains_region(region), (region, grid.region)
            # On the screen: the board draws it, its box at its place, its meter inside.
            widget, _ = app.screen.get_widget_at(region.x + 2, region.y + 1)
            assert widget is grid.board
            assert panel.shown and len(panel.shown) == PANEL_H
            assert "│ util" in panel.shown[1].plain and f"GPU {index} " in panel.shown[0].plain
            rows = screen_text(app).splitlines()[region.y : region.bottom]
            assert [r[region.x : region.right] for r in rows] == [t.plain for t in panel.shown]
