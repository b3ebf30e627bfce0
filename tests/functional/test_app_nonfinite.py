"""nan and inf in the run's step lines: the metrics strip shows them literally and no redraw,
theme changes included, raises out of a widget (a ValueError there would be toasted, then end
the app on the next theme change)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.metrics import MetricsStrip
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
SCRIPT = """\
echo "step=1 loss=2.5 acc=0.1 tok/s=2810"
echo "noise"
echo "step=2 loss=nan acc=0.1 tok/s=inf"
echo "step=3 loss=nan acc=0.1 tok/s=1e309"
exec sleep 600
"""


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    script = tmp_path / "x.sh"
    script.write_text(SCRIPT)
    h = HostConfig(command=f"sh {script}", run_root=str(tmp_path / "runs"))
    yield h
    transport = make_transport(h)  # the sleeping job goes, through control
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


def strip_text(app: DflashApp) -> str:
    return str(app.screen.query_one(MetricsStrip).render())


def draw_toasts(app: DflashApp) -> list[str]:
    return [str(n.message) for n in app._notifications if "drawing" in str(n.message)]


async def test_live_run_with_nan_and_inf_shows_them_and_survives_theme_change(
    fake_smi: object, host: HostConfig
) -> None:
    fake_smi.use("h200-idle")  # type: ignore[attr-defined]
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("l")
        await until(pilot, lambda: app.current.tracker.progress.last_step == 3)
        await until(pilot, lambda: not app.control.waits_active())
        await pilot.pause(0.2)
        shown = strip_text(app)
        assert "step 3" in shown and "loss nan" in shown and "tok/s inf" in shown
        theme = app.theme
        await pilot.press("t")
        await pilot.pause(0.2)
        assert app.is_running and app.theme != theme
        assert "loss nan" in strip_text(app)
        assert not app.draw_errors and draw_toasts(app) == []


def log_snap(t: float, lines: list[str]) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "telemetry": {"source": "none", "error": "no NVML and no nvidia-smi on PATH"},
            "procs": [{"pid": 1, "ppid": 0, "cmd": "init", "state": "S"}],
            "logs": [{"path": "/w/out.log", "exists": True, "size": 1, "lines": lines}],
        }
    )


async def test_scripted_non_finite_values_then_finite_again() -> None:
    snaps = [
        log_snap(100.0, ["step=1 loss=2.5 acc=0.4 tok/s=2810"]),
        log_snap(101.0, ["step=2 loss=-inf acc=nan tok/s=1e309"]),
        log_snap(102.0, ["step=3 loss=inf acc=0.4 tok/s=-inf"]),
        log_snap(103.0, ["step=4 loss=NaN acc=0.4 tok/s=2900"]),
    ]
    source = ScriptedSource(snaps[:2])
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 2)
        await pilot.pause(0.05)
        shown = strip_text(app)
        assert "loss -inf" in shown and "acc nan" in shown and "tok/s inf" in shown
        for _ in range(4):  # every theme redraws the strip with the bad values in its history
            await pilot.press("t")
            await pilot.pause(0.05)
            assert app.is_running
        source.push(snaps[2])
        await until(pilot, lambda: app.samples >= 3)
        await pilot.pause(0.05)
        assert "loss inf" in strip_text(app) and "tok/s -inf" in strip_text(app)
        source.push(snaps[3])
        await until(pilot, lambda: app.samples >= 4)
        await pilot.pause(0.05)
        shown = strip_text(app)
        assert "step 4" in shown and "loss nan" in shown and "tok/s 2.9K" in shown
        await pilot.press("t")
        await pilot.pause(0.05)
        assert app.is_running and not app.draw_errors and draw_toasts(app) == []


async def test_a_redraw_that_raises_on_theme_change_is_reported_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = ScriptedSource([log_snap(100.0, ["step=1 loss=2.5 tok/s=2810"])])
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)

        def broken(self: MetricsStrip) -> None:
            raise ValueError("boom")

        monkeypatch.setattr(MetricsStrip, "redraw", broken)
        for _ in range(2):
            await pilot.press("t")
            await pilot.pause(0.05)
            assert app.is_running
        assert app.draw_errors == {"metrics"}
        assert draw_toasts(app) == ["drawing metrics failed: ValueError('boom')"]  # once
