"""Over SSH the preflight asks the host: the bundled pipeline's interpreter there, without
torch, refuses the launch before any run directory is made, naming the host and the extra."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli
from light_venv import make_light_venv
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.control.preflight import INSTALL

pytestmark = pytest.mark.ssh


def test_launch_over_ssh_without_torch_there(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    python = make_light_venv(tmp_path / "venv")
    root = tmp_path / "runs"
    command = f"{python} -m dflash_train.train --preset tiny --device cpu"
    res = cli("launch", "--json", "--host", ALIAS, "--run-root", str(root), "--command", command)
    assert res.returncode == 1, res.stdout + res.stderr
    error = json.loads(res.stdout)["error"]
    assert f"the interpreter {python} on {ALIAS} cannot import torch" in error
    assert INSTALL in error and not root.exists()
