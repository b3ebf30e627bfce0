"""The published schemas hold for real output: ``status --json`` of a live run on this machine
(a real process, stepping, on a GPU of the stand-in driver), of an unreachable host, and of a
replay of the seed recording; the probe's own lines, here and as recorded on an H200. And they
can fail: a document that breaks the contract is refused."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import app, box
from schemas import check_probe_line, check_status, problems

from dflash_tui.core.probe.bundle import probe_source

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tui" / "core" / "record" / "demo" / "seed"
STEPPING = "echo 'step=1 loss=2.5 acc=0.1 tok/s=100'; echo 'step=2 loss=nan acc=0.1'; sleep 60"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def test_a_live_run_on_this_machine(fake_smi: Any, tmp_path: Path) -> None:
    common = ["--run-root", str(tmp_path / "runs"), "--topology", "0:1"]
    launched = cli("launch", "--json", "--command", STEPPING, *common)
    run = json.loads(launched.stdout)
    try:
        fake_smi.write(box(2, busy=[0]), [app(run["pid"], gpu=0)])
        time.sleep(3.5)  # past the start window: running, stepping
        doc = json.loads(cli("status", "--json", *common).stdout)
    finally:
        cli("kill", *common)
    check_status(doc)
    assert doc["run"]["state"] == "running" and doc["progress"]["step"] == 2
    assert doc["progress"]["loss"] is None and doc["progress"]["loss_finite"] is False
    assert doc["gpus"][0]["processes"][0]["owner"] == "run"
    assert doc["machine"] is not None
    after = json.loads(cli("status", "--json", *common).stdout)
    check_status(after)
    assert after["run"]["state"] == "killed" and after["run"]["exit_code"] is not None


def test_an_unreachable_host() -> None:
    res = cli("status", "--json", "--host", "127.0.0.1:1", "--run-root", "/nonexistent")
    doc = json.loads(res.stdout)
    check_status(doc)
    assert res.returncode == 1 and doc["error"] and doc["run"]["state"] == "unknown"


@pytest.mark.parametrize("at", ["+0s", "+2m", "-1s"])
def test_a_replay_of_the_seed_recording(at: str) -> None:
    res = cli("status", "--json", "--replay", str(SEED), f"--at={at}")
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    check_status(doc)
    assert doc["host"] == "gpu-box" and doc["gpus"]


def test_the_probe_line_here_and_recorded_on_an_h200(fake_smi: Any, tmp_path: Path) -> None:
    fake_smi.write(box(2, busy=[1]))
    res = subprocess.run(
        [sys.executable, "-", "--once", "--run-root", str(tmp_path)],
        input=probe_source(), capture_output=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    here = check_probe_line(res.stdout.decode().strip().splitlines()[-1])
    assert here["probe_mode"] == "python" and len(here["gpus"]) == 2
    for recorded in sorted((ROOT / "tests" / "fixtures" / "h200-live").glob("probe_*.json")):
        line = check_probe_line(recorded.read_text())
        assert line["gpus"], recorded


def test_the_shell_probes_line(fake_smi: Any, tmp_path: Path) -> None:
    """The degraded probe (no python3 on the host) prints the same format."""
    fake_smi.write(box(2, busy=[0]))
    shell = ROOT / "tui" / "core" / "probe" / "shell.sh"
    res = subprocess.run(
        ["sh", str(shell), "--once", "--run-root", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    line = check_probe_line(res.stdout.strip().splitlines()[-1])
    assert line["probe_mode"] == "shell" and len(line["gpus"]) == 2


def test_the_schemas_refuse_what_breaks_the_contract() -> None:
    doc = json.loads(cli("status", "--json", "--replay", str(SEED)).stdout)
    check_status(doc)
    for path, value in [
        (("run", "state"), "sleeping"),
        (("gpus", 0, "role"), "helper"),
        (("findings", 0, "severity"), "fatal"),
        (("schema",), 2),
        (("time",), "yesterday"),
    ]:
        bad = copy.deepcopy(doc)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert problems("status", bad), path
    del doc["run"]
    assert problems("status", doc)
