"""Telemetry faults drawn as they are: wild readings and a hung nvidia-smi.

The live app runs its real probe against the stand-in nvidia-smi on PATH (tests/fakes/),
which plays a driver reporting a utilisation of 1e23 %, negative memory of a 0 MiB card and
a temperature of 100000 C, or which hangs. The app must draw no impossible value (they become
unknown and are flagged as the telemetry-degraded finding), and must say that nvidia-smi hung
(with its timeout) rather than that there is no nvidia-smi.
"""

from __future__ import annotations

from pathlib import Path

from fakes.scenario import FakeSmi, gpu
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.core.base.config_types import Config, HostConfig

WILD = ("99999999999999991611392", "1e+23", "-1000", "100000", "-5")


def live_app(tmp_path: Path) -> DflashApp:
    return DflashApp(Config(hosts=(HostConfig(run_root=str(tmp_path / "runs")),), interval=0.5))


async def test_wild_readings_are_unknown_and_flagged(fake_smi: FakeSmi, tmp_path: Path) -> None:
    fake_smi.write(
        [
            gpu(0, util="1e+23", mem_used="-1000", mem_total="0"),
            gpu(1, mem_used="500", fields={"temperature.gpu": "100000", "power.draw": "-5"}),
        ]
    )
    app = live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: app.samples >= 1, timeout=30)
        await pilot.pause(0.3)
        grid = app.screen.query_one(GpuGrid)
        panels = {i: str(p.render()) for i, p in grid.panels.items()}
        snap, diag = app.current.last.snapshot, app.current.last.diagnosis  # type: ignore[union-attr]
    drawn = panels[0] + "\n" + panels[1]
    assert [w for w in WILD if w in drawn] == []
    g0, g1 = snap.gpus
    assert (g0.util, g0.mem_used_mib, g0.mem_total_mib) == (None, None, 0)
    assert (g1.temp_c, g1.power_w, g1.mem_used_mib) == (None, None, 500)
    degraded = [f for f in diag.findings if f.code == "telemetry-degraded"]
    assert degraded and "util" in degraded[0].message and "out of range" in degraded[0].message


async def test_a_hung_nvidia_smi_is_said_to_hang(fake_smi: FakeSmi, tmp_path: Path) -> None:
    fake_smi.hang()
    app = live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: app.samples >= 1, timeout=40)  # after the 5 s timeout
        await pilot.pause(0.3)
        text = str(app.screen.query_one("#no-gpus").render())
    assert "did not answer within 5s" in text and "hung" in text, text
    assert "no NVML and no nvidia-smi" not in text
