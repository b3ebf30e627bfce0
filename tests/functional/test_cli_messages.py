"""What the command line says, as a user reads it (real subprocesses): an error names its host
once; findings give no app keys where there are none; `dflash-train --help` is only help."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

FAILING = "false {cmd}"  # a container wrapper that fails: every command on the host fails


def tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unreachable_host_is_named_once(tmp_path: Path) -> None:
    root = str(tmp_path / "runs")
    res = tui("status", "--container", FAILING, "--run-root", root)
    assert res.returncode == 1
    assert res.stdout.strip() == "local: the probe printed nothing (exit 1): no error text"
    doc = json.loads(tui("status", "--json", "--container", FAILING, "--run-root", root).stdout)
    assert doc["error"].count("local") == 1
    res = tui("kill", "--container", FAILING, "--run-root", root)
    assert res.returncode == 1 and res.stderr.count("local") == 1, res.stderr
    # kill's first verb is `signal` (it takes the launch lock before it looks): nothing came back
    assert res.stderr.startswith("dflash-tui: kill: signal failed on local (exit 1, no answer)")


KEY_HINT = re.compile(r"\((?:[lkrKA]|key \w)\)|press [a-zA-Z]\b|with [lkr]\b")


def test_status_findings_tell_no_app_keys(fake_smi: Any, tmp_path: Path) -> None:
    """The seed incident (no run: idle GPUs, a missing log) and an orphan, as a table and as
    JSON: each finding says what to do next without a key to press."""
    root = str(tmp_path / "runs")
    for fmt in ([], ["--json"]):
        res = tui("status", *fmt, "--log", str(tmp_path / "absent.log"), "--run-root", root)
        assert res.returncode == 0, res.stderr
        assert "launch" in res.stdout and "Next:" in res.stdout
        assert not KEY_HINT.search(res.stdout), KEY_HINT.search(res.stdout)


def test_dflash_train_help_is_only_help() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "dflash_train.train", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0
    assert res.stdout.splitlines()[0].startswith("usage: dflash-train"), res.stdout[:200]
    assert "starting" not in res.stdout + res.stderr
