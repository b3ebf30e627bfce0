"""Start-up and unread data are not problems: a real run that has not stepped yet keeps its
GPUs out of ``idle`` within the start-up grace (and past a grace set short, they are idle);
GPUs never read are unknown, not 0 healthy; ``topology-mismatch`` names only what can be
fixed; a label that held before the first sample is written as at least (``idle >= 1s``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import box
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.core.base.config_types import Config, HostConfig

ROOT = Path(__file__).resolve().parents[2]
SEED_LOG = "/workspace/train_stdout_flex6.log"


def dflash(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
    )  # fmt: skip


def labels(doc: dict[str, Any]) -> dict[int, list[str]]:
    return {g["index"]: g["labels"] for g in doc["gpus"]}


@pytest.fixture
def started(fake_smi: Any, tmp_path: Path) -> Iterator[Path]:
    """A real run (sleep) launched on GPUs 0 and 1, which the driver shows idle: the run
    has not stepped yet (no step event, no load), past its start window."""
    fake_smi.write(box(2))
    root = tmp_path / "runs"
    res = dflash("launch", "--json", "--run-root", str(root), "--command", "sleep 120",
                 "--start-window", "1", "--topology", "0:1")  # fmt: skip
    run = json.loads(res.stdout)
    assert run["ok"], res.stdout + res.stderr
    time.sleep(3)  # well past the start window: "running", and no step yet
    yield root
    dflash("kill", "--run-root", str(root), "--grace", "1")


def test_a_run_not_stepping_yet_has_no_idle_gpus_within_the_grace(
    started: Path, tmp_path: Path
) -> None:
    doc = json.loads(dflash("status", "--json", "--run-root", str(started),
                            "--topology", "0:1").stdout)  # fmt: skip
    assert doc["run"]["state"] == "running"
    assert labels(doc) == {0: ["ok"], 1: ["ok"]}
    assert "idle" not in {f["code"] for f in doc["findings"]}
    # The grace is a named threshold: set short, the same GPUs are idle.
    cfg = tmp_path / "short.toml"
    cfg.write_text("[thresholds]\nstartup_grace_s = 1.0\n")
    short = json.loads(dflash("--config", str(cfg), "status", "--json", "--run-root",
                              str(started), "--topology", "0:1").stdout)  # fmt: skip
    assert labels(short) == {0: ["idle"], 1: ["idle"]}


def test_gpus_never_read_are_unknown_not_unhealthy(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    env.pop("FAKE_SMI_SCENARIO", None)
    res = dflash("status", "--run-root", str(tmp_path), env=env)
    assert "healthy target ?/5 unread, drafter ?/3 unread" in res.stdout, res.stdout
    assert "0/5" not in res.stdout


def test_topology_mismatch_names_only_what_can_be_fixed(fake_smi: Any, tmp_path: Path) -> None:
    # The seed incident: no run; GPUs 2, 3, 7 carry a phantom load, the others are idle.
    doc = json.loads(dflash("status", "--json", "--log", SEED_LOG, "--run-root",
                            str(tmp_path)).stdout)  # fmt: skip
    topo = next(f for f in doc["findings"] if f["code"] == "topology-mismatch")
    assert topo["gpus"] == [2, 3, 7]
    assert "fix the GPUs labelled above" not in topo["message"]
    assert (
        "Next: fix GPU 2 (busy-no-memory), GPU 3 (busy-no-memory), GPU 7 (busy-no-memory)"
        in (topo["message"])
    )
    assert "GPU 0" not in topo["message"]  # idle, no run alive: nothing to fix there


async def test_a_label_held_from_the_first_sample_is_written_as_at_least(
    fake_smi: Any, tmp_path: Path
) -> None:
    fake_smi.write(box(2))
    host = HostConfig(run_root=str(tmp_path / "runs"))
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=(160, 50)) as pilot:
        grid = app.screen.query_one(GpuGrid)
        await until(pilot, lambda: 0 in grid.panels and "idle >= " in grid.panels[0].render().plain,
                    timeout=30)  # fmt: skip
        last = app.current.last
        assert last is not None
        (label,) = last.diagnosis.gpus[0].labels
        assert label.code == "idle" and label.at_least
