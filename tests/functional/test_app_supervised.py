"""The app opened beside a live ``dflash-tui supervise`` (real processes, both with
auto-restart on): the header says ``supervised``; a crash is restarted once, by the
supervisor, not twice; ``A`` changes the supervisor's policy (read back from supervisor.json)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from supervise_util import cleanup, cli, config, record, run_dirs
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.header import RunHeader
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.timings import RestartPolicy

pytestmark = pytest.mark.slow
SIZE = (160, 40)
POLICY = RestartPolicy(enabled=True, retries=3, backoff_s=0.2, max_backoff_s=1.0)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def header(app: DflashApp) -> str:
    return str(app.screen.query_one(RunHeader).render())


async def test_app_beside_a_live_supervisor(root: Path, tmp_path: Path) -> None:
    mark = tmp_path / "second"
    job = f"if [ -e {mark} ]; then exec sleep 300; fi; touch {mark}; sleep 2; exit 1"
    cfg = config(tmp_path / "cfg.toml", "retries = 3\nbackoff_s = 1.0")
    fast = ("--interval", "0.5", "--start-window", "0.5", "--auto-restart", "--detach")
    res = cli("supervise", "--config", str(cfg), "--run-root", str(root), "--command", job, *fast)
    assert res.returncode == 0, res.stderr
    pid = record(root)["pid"]
    app = DflashApp(Config(hosts=(HostConfig(command=job, run_root=str(root), restart=POLICY),),
                           interval=0.3))  # fmt: skip
    bridge = app.host_states[0].bridge
    bridge.supervise_poll, bridge.start_window = 0.1, 0.5  # the app's own loop, fast
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: f"supervised (PID {pid} since" in header(app), 20)
        assert "0 restarts, auto-restart on" in header(app)
        await pilot.press("l")
        await until(pilot, lambda: len(run_dirs(root)) == 2, 30)  # the crash, restarted
        await until(pilot, lambda: "1 restart," in header(app), 20)
        await pilot.pause(3.0)  # 30 polls of the app's own loop: it leaves the crash alone
        assert len(run_dirs(root)) == 2 and record(root)["restarts"] == 1
        assert not any(e.kind == "restarted" for e in app.current.timeline.events)
        await pilot.press("A")
        await until(pilot, lambda: record(root)["policy"]["enabled"] is False, 15)
        await until(pilot, lambda: "auto-restart off" in header(app), 15)
        await pilot.press("A")
        await until(pilot, lambda: record(root)["policy"]["enabled"] is True, 15)
        assert app.current.auto == "on"  # the app's own loop was never toggled
    assert "asked by dflash-tui app PID" in (root / "supervisor.log").read_text()
