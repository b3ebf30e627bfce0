"""A kill is one value, built when ``k`` is pressed and the host has answered: a sample that
shows another run, arriving while the host is asked or while the dialog is open, changes
neither what the dialog names nor what ``y`` signals. Real runs in their own process groups
on this machine; the feed is scripted with real samples of them, so the other run's sample
arrives exactly when the test says."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from supervise_util import alive
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control.kill import kill, kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.transport import LocalTransport

# A stepping job with one child in its group and one that left it (setsid).
JOB = (
    "sleep 300 & setsid sleep 300 & "
    'i=0; while :; do i=$((i+1)); echo "step=$i loss=1.0 tok/s=100"; sleep 0.1; done'
)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command=JOB, run_root=str(tmp_path / "runs"), workdir=str(tmp_path))
    yield h
    t = LocalTransport()
    try:
        await kill_latest(t, h, grace=1.0, check_gpu=False)
    finally:
        await t.close()


async def test_y_signals_the_run_the_dialog_named_though_another_run_was_sampled_since(
    host: HostConfig,
) -> None:
    t = LocalTransport()
    # Run B first: a real sample of it while it runs, then it ends.
    b = await launch(t, host, start_window=0.5)
    assert b.ok and b.run_id is not None
    sample_b = await sample_once(t, host)
    assert sample_b.run is not None and sample_b.run.id == b.run_id
    assert (await kill(t, host, run_id=b.run_id, grace=1.0, check_gpu=False)).ok
    # Run A: the run shown when k is pressed.
    a = await launch(t, host, start_window=0.5)
    assert a.ok and a.run_id is not None and a.run_id != b.run_id
    sample_a = await sample_once(t, host)
    assert sample_a.run is not None and sample_a.run.id == a.run_id
    await t.close()
    # B's sample comes last, as a sample delayed on its way (or a stale replica) would.
    late_b = dataclasses.replace(sample_b, time=sample_a.time + 1.0)

    source = ScriptedSource([sample_a])
    app = DflashApp(Config(hosts=(host,), interval=0.5), source=source)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: app.current.last is not None and app.current.last.diagnosis.run is not None,
        )
        assert app.current.live_run() is not None  # A is alive: k acts on it
        await pilot.press("k")
        source.push(late_b)  # while the host is asked what the kill would signal
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await until(pilot, lambda: app.samples >= 2)  # B's sample is drawn before y
        assert (
            app.current.last.diagnosis.run is not None
            and app.current.last.diagnosis.run.id == b.run_id
        )
        screen = app.screen
        assert isinstance(screen, ConfirmScreen)
        assert f"Kill run {a.run_id}" in screen.title_text
        body = str(screen.query_one("#confirm-body").render())
        assert f"run {a.run_id}" in body and b.run_id not in body
        named = {int(m) for m in re.findall(r"^\s+(\d+)\s", body, re.MULTILINE)}
        assert a.pgid in named and len(named) >= 3  # the shell, its child and the stray
        await pilot.press("y")
        await until(pilot, lambda: not any(alive(p) for p in named), timeout=30)
        await until(pilot, lambda: not app.control.waits_active())
