"""`launch`/`kill --config multi.toml --host X` act on entry X's run (real processes), and a
launch refused because a run is live names that run, its pid included."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import live_group

JOB = "exec sleep 60"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def as_json(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in res.stderr, res.stderr
    return json.loads(res.stdout)


def alive(pgid: int) -> bool:
    return bool(live_group(pgid))


@pytest.fixture
def multi(tmp_path: Path) -> Iterator[str]:
    """Two local hosts told apart by their labels, each with its own run root."""
    text = ""
    for name in ("a", "b"):
        text += (
            f'[[hosts]]\nlabel = "{name}"\n[hosts.run]\ncommand = "{JOB}"\n'
            f'run_root = "{tmp_path / name}"\n'
        )
    path = tmp_path / "multi.toml"
    path.write_text(text)
    yield str(path)
    for name in ("a", "b"):  # whatever a test left alive goes, through control
        cli("kill", "--config", str(path), "--host", name, "--grace", "1")


def test_kill_with_host_acts_on_that_entrys_run(multi: str, tmp_path: Path) -> None:
    launched = as_json(cli("launch", "--config", multi, "--host", "b", "--json"))
    assert launched["ok"] and Path(launched["dir"]).parent == tmp_path / "b", launched
    pgid = launched["pgid"]
    assert alive(pgid)
    other = cli("kill", "--config", multi, "--host", "a", "--json")
    assert as_json(other)["signals"] == [] and alive(pgid)  # a's run root holds no run
    killed = as_json(cli("kill", "--config", multi, "--host", "b", "--json", "--grace", "2"))
    assert killed["ok"] and killed["signals"] == ["TERM"], killed
    assert not alive(pgid)


def test_a_refused_launch_names_the_live_runs_pid(multi: str) -> None:
    first = as_json(cli("launch", "--config", multi, "--host", "a", "--json"))
    assert first["ok"], first
    again = cli("launch", "--config", multi, "--host", "a", "--json")
    assert again.returncode == 1
    refused = as_json(again)
    assert refused["refused"] and refused["run_id"] == first["run_id"]
    assert (refused["pid"], refused["pgid"]) == (first["pid"], first["pgid"])
    assert refused["dir"] == first["dir"]
