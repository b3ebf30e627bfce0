"""A GPU's processes in one order wherever they are listed: most GPU memory first, then most
CPU. Real processes hold the (stand-in driver's) GPU memory: eight on GPU 0, where the 21 GiB
job started last (the highest PID) and seven idle 866 MiB holders before it; two equal
holders on GPU 1, the later one spinning a CPU. ``status`` lists them and the
``foreign-process`` finding names their PIDs in that order; the app's GPU panel shows the
21 GiB job as its one row, and the spinning one first on GPU 1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import app, box, gpu
from support import until

from dflash_train.topology import Topology
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.core.base.config_types import Config, HostConfig

ROOT = Path(__file__).resolve().parents[2]
SPIN = [sys.executable, "-c", "while True: pass"]


@pytest.fixture
def holders(fake_smi: Any) -> Iterator[tuple[list[int], int, int, int]]:
    """(GPU 0's small holders, its big job, GPU 1's sleeper, GPU 1's spinner) as PIDs."""
    procs = [subprocess.Popen(["sleep", "120"]) for _ in range(8)]
    sleeper, spinner = subprocess.Popen(["sleep", "120"]), subprocess.Popen(SPIN)
    everyone = [*procs, sleeper, spinner]
    try:
        small, big = [p.pid for p in procs[:7]], procs[7].pid
        gpus = box(2)
        gpus[0] = gpu(0, util=100, mem_used=21 * 1024 + 7 * 866)
        gpus[1] = gpu(1, util=30, mem_used=2000)
        apps = [app(pid, 0, 866) for pid in small] + [app(big, 0, 21 * 1024)]
        apps += [app(sleeper.pid, 1, 1000), app(spinner.pid, 1, 1000)]
        fake_smi.write(gpus, apps)
        yield small, big, sleeper.pid, spinner.pid
    finally:
        for p in everyone:
            p.kill()
            p.wait()


def test_status_and_the_finding_list_the_heaviest_first(
    holders: tuple[list[int], int, int, int], tmp_path: Path
) -> None:
    small, big, _, _ = holders
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--json", "--topology", "0:1",
         "--run-root", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    doc = json.loads(res.stdout)
    gpu0 = next(g for g in doc["gpus"] if g["index"] == 0)
    assert [p["pid"] for p in gpu0["processes"]] == [big, *small]
    msg = next(f["message"] for f in doc["findings"] if f["code"] == "foreign-process")
    at = [msg.index(f"pid {pid} ") for pid in [big, *small]]
    assert at == sorted(at), msg


async def test_the_gpu_panel_shows_the_heaviest_first(
    holders: tuple[list[int], int, int, int], tmp_path: Path
) -> None:
    small, big, sleeper, spinner = holders
    host = HostConfig(run_root=str(tmp_path), topology=Topology.from_lists([0], [1]))
    dflash = DflashApp(Config(hosts=(host,), interval=0.5))
    async with dflash.run_test(size=(160, 50)) as pilot:

        def gpu1_order() -> list[int]:
            last = dflash.current.last
            views = last.diagnosis.gpus if last is not None else ()
            return [p.pid for v in views if v.index == 1 for p in v.processes]

        # The spinner's CPU shows from the second sample on (a rate needs two readings).
        await until(pilot, lambda: gpu1_order() == [spinner, sleeper], timeout=30)
        await pilot.pause(0.3)
        shown = dflash.screen.query_one(GpuGrid).panels[0].render().plain
        assert f"{big} " in shown and "+7 more processes" in shown, shown
        assert not any(f"{pid} " in shown for pid in small), shown
