"""The published schemas hold over SSH: ``status --json`` of a live run on a host reached
through the loopback sshd, of the shell probe's host (no python3), of a host whose key is
unknown (unreachable), and the probe's own line as it comes back over the SSH channel."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest
from conftest import cli
from fakes.scenario import app, box, write_scenario
from loopback_sshd import ALIAS, LoopbackSshd
from schemas import check_probe_line, check_status
from test_ssh_status import no_python_bin

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.feed import probe_command
from dflash_tui.core.probe.bundle import probe_source

pytestmark = pytest.mark.ssh
STEPPING = "echo 'step=7 loss=1.5 acc=0.2 tok/s=50'; sleep 60"


def test_a_live_run_over_ssh(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    common = ["--run-root", str(tmp_path / "runs"), "--topology", "0:1", "--host", ALIAS]
    run = json.loads(cli("launch", "--json", "--command", STEPPING, *common).stdout)
    try:
        write_scenario(ssh_env.root / "scenario.json", box(2, busy=[0]), [app(run["pid"], 0)])
        time.sleep(3.5)
        doc = json.loads(cli("status", "--json", *common).stdout)
    finally:
        os.killpg(run["pgid"], signal.SIGKILL)
    check_status(doc)
    assert doc["host"] == ALIAS and doc["run"]["state"] == "running"
    assert doc["progress"]["step"] == 7 and doc["gpus"][0]["processes"][0]["owner"] == "run"


def test_the_shell_probe_and_an_unknown_host_over_ssh(
    ssh_env: LoopbackSshd, tmp_path: Path
) -> None:
    bin_dir = no_python_bin(tmp_path / "bin")
    template = f"env PATH={bin_dir} FAKE_SMI_SCENARIO={ssh_env.root / 'scenario.json'} {{cmd}}"
    common = ["--run-root", str(tmp_path / "runs"), "--topology", "0:1"]
    shell = json.loads(
        cli("status", "--json", "--host", ALIAS, "--container", template, *common).stdout
    )
    check_status(shell)
    assert any("degraded probe (shell)" in f["message"] for f in shell["findings"])
    res = cli("status", "--json", "--host", f"{ALIAS}-unknown", *common)
    unknown = json.loads(res.stdout)
    check_status(unknown)
    assert res.returncode == 1 and "not in known_hosts" in unknown["error"]


def test_the_probe_line_over_ssh(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    write_scenario(ssh_env.root / "scenario.json", box(2, busy=[1]))
    host = HostConfig(address=ALIAS, run_root=str(tmp_path / "runs"))

    async def one_line() -> str:
        transport = make_transport(host)
        try:
            cmd = probe_command(transport.python, host, once=True)
            res = await transport.run(cmd, probe_source(), 60)
        finally:
            await transport.close()
        return str(res.stdout).strip().splitlines()[-1]

    line = check_probe_line(asyncio.run(one_line()))
    assert line["probe_mode"] == "python" and len(line["gpus"]) == 2
