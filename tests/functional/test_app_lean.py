"""The app's process loads no more than it uses: plotext only once the History tab is opened,
urllib and http.client only for a webhook, asyncssh and the SSH and Slurm modules only for such
a host. It runs in a fresh interpreter, as the app's command does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakes.scenario import NVML_FAKE_DIR, gpu, write_scenario

RUN = r"""
import json, sys
import asyncio
from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config

out = {}

async def main():
    app = DflashApp(Config(), source=ScriptedSource(scenes.history_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 5:
            await pilot.pause(0.05)
        out["before"] = sorted(sys.modules)
        await pilot.press("e", "e")
        view = app.detail().history()
        await pilot.pause(0.1)
        while view.building:
            await pilot.pause(0.05)
        out["plots"] = [p.text is not None for p in view.query("HistoryPlot")]
        out["after"] = sorted(sys.modules)

asyncio.run(main())
print(json.dumps(out))
"""


def test_the_app_loads_neither_plotext_nor_urllib_until_used() -> None:
    res = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    before, after = set(out["before"]), set(out["after"])
    assert "dflash_tui.app.host.pane" in before  # the list is the running app's
    for name in ("plotext", "textual_plotext", "http.client", "urllib.request"):
        assert name not in before, name
    # The History's and the GPU table's views (and Textual's DataTable) come with their tabs.
    later = ("dflash_tui.app.host.history.view", "dflash_tui.app.host.procs.gpu_table")
    for name in (*later, "textual.widgets._data_table"):
        assert name not in before, name
    # Opening the History tab brings plotext, and its five plots are drawn.
    assert {"plotext", "textual_plotext", "dflash_tui.app.host.history.view"} <= after
    assert out["plots"] == [True] * 5


LOCAL = r"""
import asyncio, json, sys
from dflash_tui.app.app import DflashApp
from dflash_tui.core.base.config_types import Config, HostConfig

out = {}

async def main():
    app = DflashApp(Config(hosts=(HostConfig(run_root=sys.argv[1]),)))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 3:
            await pilot.pause(0.05)
        snap = app.host_states[0].snapshot
        out["gpus"] = len(snap.gpus) if snap else 0
        out["modules"] = sorted(sys.modules)

asyncio.run(main())
print(json.dumps(out))
"""

# What only an SSH or Slurm host, a webhook, the exporter or the History tab uses: none of it
# belongs in the resident memory of the app watching this machine alone (its default view).
NOT_FOR_A_LOCAL_HOST = (
    "asyncssh",
    "cryptography",
    "dflash_tui.core.link.ssh",
    "dflash_tui.core.link.sshlib",
    "dflash_tui.core.link.ssh_connect",
    "dflash_tui.core.link.slurm_node",
    "dflash_tui.app.control.slurm_bridge",
    "dflash_tui.core.alerts.http_post",
    "dflash_tui.core.export.openmetrics",
    "plotext",
    "textual_plotext",
    "http.client",
    "urllib.request",
)


def test_the_app_of_a_local_host_loads_no_ssh_slurm_webhook_or_plot_module(tmp_path: Path) -> None:
    """The real local probe (NVML through the fake pynvml, 8 GPUs) feeds the app; it samples,
    and nothing listed above is imported on the way."""
    scenario = write_scenario(tmp_path / "scenario.json", [gpu(i, 50, 1000) for i in range(8)])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(NVML_FAKE_DIR), os.environ.get("PYTHONPATH")) if p
        ),
        "FAKE_NVML_SCENARIO": str(scenario),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    res = subprocess.run(
        [sys.executable, "-c", LOCAL, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    loaded = set(out["modules"])
    assert out["gpus"] == 8  # the fake's GPUs, read by the local probe
    assert {"dflash_tui.core.link.local_feed", "pynvml"} <= loaded
    assert sorted(loaded & set(NOT_FOR_A_LOCAL_HOST)) == []
