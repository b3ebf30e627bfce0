"""The host strip: RAM, swap and the run root's free space, and the pipeline's workers as one
row with the one behind marked. The renderers are pure (no terminal); then the app, fed the
``host_health`` scene through ScriptedSource, shows it under the metrics, and hides it for a
probe that sends no machine readings."""

from __future__ import annotations

from rich.text import Text
from support import until

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.host.strip import HostStrip, host_line, workers_text
from dflash_tui.app.widgets.palette import FALLBACK
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.machine import Machine, Worker
from dflash_tui.core.diagnosis.host_view import host_parts, worker_views

GIB = 1 << 30


def _machine(free: int, total: int = 100 * GIB, avail_kb: int = 90_000_000) -> Machine:
    m = Machine.from_dict({
        "mem_total_kb": 100_000_000, "mem_available_kb": avail_kb, "swap_total_kb": 0,
        "swap_free_kb": 0, "oom_kill": 0,
        "disks": [{"what": "run_root", "path": "/r", "exists": True, "total_bytes": total,
                   "free_bytes": free},
                  {"what": "out_dir", "path": "/r/x", "exists": True, "total_bytes": total,
                   "free_bytes": free},
                  {"what": "compile_cache", "path": "/tmp/ti", "exists": False,
                   "total_bytes": 10 * GIB, "free_bytes": 9 * GIB}]})  # fmt: skip
    assert m is not None
    return m


def _styles(t: Text, word: str) -> list[object]:
    return [s.style for s in t.spans if word in t.plain[s.start : s.end]]


def test_host_line_names_readings_and_marks_low_ones() -> None:
    ok = host_line(host_parts(_machine(50 * GIB)), FALLBACK)
    assert ok.plain == (
        "host RAM 85.8 GiB available of 95.4 GiB (90 %) · swap none · run root, out dir /r: "
        "50.0 GiB free of 100.0 GiB (50 %) · compile cache /tmp/ti: 9.0 GiB free of 10.0 GiB (90 %)"
    )
    low = host_line(host_parts(_machine(2 * GIB, avail_kb=1_000_000)), FALLBACK)
    assert "RAM 977 MiB available of 95.4 GiB (1 %) LOW" in low.plain
    assert "run root, out dir /r: 2.0 GiB free of 100.0 GiB (2 %) LOW" in low.plain
    assert FALLBACK.fg("warning", bold=True) in _styles(low, "LOW")
    assert "LOW" not in ok.plain and not _styles(ok, "LOW")
    narrow = host_line(host_parts(_machine(2 * GIB)), FALLBACK, 60)
    assert narrow.cell_len <= 60 and "RAM 85.8 GiB free" in narrow.plain
    assert "run root, out dir 2.0 GiB free LOW" in narrow.plain  # the short forms first


def test_workers_row_marks_the_one_behind() -> None:
    now = 1000.0
    ws = [Worker("target", j, j, step=40, state="wait:queue", since=now - 1, time=now - 1)
          for j in range(5)]  # fmt: skip
    ws += [
        Worker("drafter", i, 5 + i, step=30, state="work" if i == 1 else "wait:barrier",
               since=now - 100 if i == 1 else now - 2, time=now - 1)
        for i in range(3)
    ]  # fmt: skip
    views = worker_views(list(reversed(ws)), now)  # the row's order is its own
    row = workers_text(views, FALLBACK)
    assert row.plain.startswith("workers T0@g0 s40 T1@g1 s40")
    assert " D0@g5 s30 D1@g6 s30 BEHIND 100s  D2@g7 s30" in row.plain
    chip = FALLBACK.chip("error")
    assert any(s.style == chip for s in row.spans if "BEHIND" in row.plain[s.start : s.end])
    healthy = worker_views([w for w in ws if (w.role, w.index) != ("drafter", 1)], now)
    assert workers_text(healthy, FALLBACK).plain.endswith("D2@g7 s30  none behind")
    narrow = workers_text(views, FALLBACK, 50)
    assert narrow.cell_len <= 50 and "BEHIND" in narrow.plain  # the one behind is kept longest


async def test_app_shows_the_strip_and_hides_it_without_readings() -> None:
    snaps = scenes.host_health()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.pause(0.2)
        strip = app.screen.query_one(HostStrip)
        text = str(strip.content)
        assert strip.display and strip.size.height == 2
        host, workers = text.split("\n")
        assert host.startswith("host RAM 1783.4 GiB") and "LOW" in host
        assert "D1@g6 s800 BEHIND 85s" in workers and workers.count("BEHIND") == 1
    plain = scenes.healthy_run(samples=2)
    app = DflashApp(Config(), source=ScriptedSource(plain))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(plain))
        await pilot.pause(0.2)
        assert not app.screen.query_one(HostStrip).display
