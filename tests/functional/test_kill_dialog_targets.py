"""The kill dialog names every PID control will signal, the run's processes that left its
group (setsid) among them. The truth is read here, by neither rule: the group from /proc and
the PIDs the job itself wrote; after the kill, every one of them is gone."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from supervise_util import alive
from support import live_group, until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

# A stepping job with one child in its group and one that left it by setsid.
JOB = (
    "sleep 300 & setsid sleep 300 & echo $! > stray; "
    'i=0; while :; do i=$((i+1)); echo "step=$i loss=1.0 tok/s=100"; sleep 0.1; done'
)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"), workdir=str(tmp_path))
    yield h
    transport = make_transport(h)
    try:
        await control_kill.kill_latest(transport, h, grace=1.0, check_gpu=False)
    finally:
        await transport.close()


async def test_the_dialog_names_the_stray_and_the_kill_ends_every_named_pid(
    host: HostConfig, tmp_path: Path
) -> None:
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("l")
        await until(pilot, lambda: (tmp_path / "stray").exists() and not app.control.waits_active())
        await until(
            pilot,
            lambda: (
                app.current.last is not None and app.current.last.diagnosis.run_state == "running"
            ),
        )
        run = app.current.last.diagnosis.run  # type: ignore[union-attr]
        assert run is not None and run.pgid is not None
        stray = int((tmp_path / "stray").read_text())
        before = set(live_group(run.pgid))
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = str(app.screen.query_one("#confirm-body").render())
        time.sleep(0.3)  # the loop's `sleep 0.1` children come and go: keep what stays
        truth = (before & set(live_group(run.pgid))) | {stray}
        named = {int(m) for m in re.findall(r"^\s+(\d+)\s", body, re.MULTILINE)}
        assert stray in named and "left the group" in body
        assert truth <= named, f"not named: {truth - named}"
        await pilot.press("y")
        await until(pilot, lambda: not any(alive(p) for p in named), timeout=30)
