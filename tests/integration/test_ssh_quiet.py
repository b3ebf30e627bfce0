"""A command that reaches a host over SSH prints only our words on stderr: none of the
``CryptographyDeprecationWarning`` blocks asyncssh's import made cryptography print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli
from loopback_sshd import ALIAS, LoopbackSshd

pytestmark = pytest.mark.ssh


def test_status_over_ssh_has_a_quiet_stderr(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    res = cli("status", "--json", "--host", ALIAS, "--run-root", str(tmp_path / "runs"))
    assert json.loads(res.stdout)["host"] == ALIAS  # the host was reached over SSH
    assert "Warning" not in res.stderr, res.stderr
    assert res.stderr == ""
