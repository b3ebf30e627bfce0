"""Words of the app that depend on where it runs: a finding's next step names a key only
where the key works (not in --read-only; the findings' own words name none, as the command
line prints them), and a dialog names the host only when there are several."""

from __future__ import annotations

import pytest
from support import until

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig


@pytest.mark.parametrize("read_only", [False, True])
async def test_the_seed_incidents_launch_hint_follows_the_keys(read_only: bool) -> None:
    app = DflashApp(Config(read_only=read_only), source=ScriptedSource(scenes.seed_incident(1)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.pause(0.2)
        text = str(app.screen.query_one(FindingsList).query_one(".body").render())
    assert "Next: launch the run." in text  # idle GPUs, no run: the same words either way
    assert ("(press l)" in text) is not read_only, text
    assert "(l)" not in text and "press K" not in text


@pytest.mark.parametrize("hosts", [1, 2])
async def test_the_restart_dialog_names_the_host_only_among_several(hosts: int) -> None:
    cfg = Config(hosts=tuple(HostConfig(name=f"h{i}") for i in range(hosts)))
    sources = [ScriptedSource(scenes.seed_incident(1)) for _ in range(hosts)]
    app = DflashApp(cfg, sources=sources)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= hosts)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        title = app.screen.title_text  # type: ignore[attr-defined]
        await pilot.press("n")
    assert title == (
        "Restart (launch) the run?" if hosts == 1 else "Restart (launch) the run on h0?"
    )
