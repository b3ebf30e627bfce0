"""A container template whose namespace dies with each command.

``unshare --pid --fork --mount-proc {cmd}`` runs every command as the init of a new PID
namespace: when the launch command returns, the kernel kills the job it just started. The
launch must fail and name that likely cause, not only "the process group vanished".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "unshare --pid --fork --mount-proc {cmd}"


def unshare_works() -> bool:
    try:
        res = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


def test_a_template_whose_namespace_dies_names_the_likely_cause(tmp_path: Path) -> None:
    if not unshare_works():
        if os.environ.get("CI"):
            pytest.fail("CI must run the namespace test: unshare needs root", pytrace=False)
        pytest.skip("unshare --pid --fork does not work here (it needs root)")
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "launch", "--run-root", str(tmp_path),
         "--container", TEMPLATE, "--command", "sleep 30", "--start-window", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    assert "killed" in res.stdout and "vanished" in res.stdout
    assert TEMPLATE in res.stdout and "namespace that ends with it" in res.stdout
    assert "long-lived container" in res.stdout
