"""``dflash-tui status --json`` over SSH: the same as locally, several hosts, no python3."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import cli
from fakes.scenario import FAKES, app, box, write_scenario
from loopback_sshd import ALIAS, LoopbackSshd

pytestmark = pytest.mark.ssh

# Legitimately different between two samples of one machine by two routes.
VOLATILE = ("host", "time")
# Readings of the machine that move between two samples taken a moment apart.
MOVING = ("mem_available_kb", "swap_free_kb")
MOVING_DISK = ("free_bytes", "free_inodes")


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in doc.items() if k not in VOLATILE}
    machine = out.get("machine")
    if isinstance(machine, dict):
        assert all(k in machine for k in MOVING), machine  # present by both routes
        still = {k: v for k, v in machine.items() if k not in MOVING}
        still["disks"] = [
            {k: v for k, v in d.items() if k not in MOVING_DISK} for d in machine.get("disks", [])
        ]
        out["machine"] = still
    return out


@pytest.fixture
def holder(ssh_env: LoopbackSshd, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real process the fake driver says holds 1002 MiB on GPU 1 (a foreign job)."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    write_scenario(ssh_env.root / "scenario.json", box(2, busy=[1]), [app(proc.pid, gpu=1)])
    yield proc
    proc.kill()
    proc.wait()


def test_status_over_ssh_equals_local(
    ssh_env: LoopbackSshd, holder: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """A run (launched here) on GPU 0, another job on GPU 1, a watched log: same document."""
    log = tmp_path / "train.log"
    log.write_text("step=1 loss=2.0 acc=0.1 tok/s=10\n")
    common = ["--run-root", str(tmp_path / "runs"), "--log", str(log), "--topology", "0:1"]
    run = json.loads(cli("launch", "--json", "--command", "sleep 60", *common).stdout)
    try:
        apps = [app(run["pid"], gpu=0), app(holder.pid, gpu=1)]
        write_scenario(ssh_env.root / "scenario.json", box(2, busy=[0, 1]), apps)
        time.sleep(max(0.0, 3.2 - (time.time() - run_started(run))))  # past the start window
        local = cli("status", "--json", *common)
        remote = cli("status", "--json", "--host", ALIAS, *common)
    finally:
        os.killpg(run["pgid"], signal.SIGKILL)
    assert local.stdout and remote.stdout, local.stderr + remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert (a["host"], b["host"]) == ("local", ALIAS)
    assert comparable(a) == comparable(b)
    assert b["run"]["state"] == "running" and b["run"]["pgid"] == run["pgid"]
    owners = [[(p["pid"], p["owner"]) for p in g["processes"]] for g in b["gpus"]]
    assert owners == [[(run["pid"], "run")], [(holder.pid, "foreign")]]


def run_started(run: dict[str, Any]) -> float:
    return float((Path(run["dir"]) / "started_at").read_text().split()[0])


def test_several_hosts_give_a_json_list(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    cfg = tmp_path / "hosts.toml"
    cfg.write_text(
        f'[[hosts]]\naddress = "{ALIAS}"\n[hosts.run]\nrun_root = "{tmp_path}/a"\n'
        f'[[hosts]]\naddress = "{ALIAS}-b"\n[hosts.topology]\ntarget = [0]\ndrafter = [1]\n'
        f'[[hosts]]\naddress = "{ALIAS}-unknown"\n'
    )
    res = cli("status", "--json", "--config", str(cfg))
    docs = json.loads(res.stdout)
    assert isinstance(docs, list) and [d["host"] for d in docs] == [
        ALIAS,
        f"{ALIAS}-b",
        f"{ALIAS}-unknown",
    ]
    present = [[g["index"] for g in d["gpus"] if g["uuid"]] for d in docs]
    assert present == [[0, 1], [0, 1], []]
    assert docs[1]["topology"] == {"target": [0], "drafter": [1]}
    # One unreachable host does not hide the others; it says why.
    assert docs[2]["findings"][0]["code"] == "host-unreachable"
    assert "not in known_hosts" in docs[2]["findings"][0]["message"]
    assert docs[2]["run"]["state"] == "unknown" and docs[2]["time"] and docs[2]["schema"] == 1
    assert res.returncode == 1


TOOLS = "sh awk sed cat grep ps tail head wc ls date od tr mktemp rm mkdir mv sleep timeout"
TOOLS += " hostname getconf uname env"


def no_python_bin(where: Path) -> Path:
    """A PATH folder with the usual tools but no python3 (nvidia-smi: the fake, run directly)."""
    where.mkdir()
    for tool in TOOLS.split():
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            os.symlink(found, where / tool)
    python = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
    smi = where / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec {python} {FAKES / "nvidia-smi"} "$@"\n')
    smi.chmod(0o755)
    return where


def test_no_python3_falls_back_to_the_shell_probe(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    """A container without python3 (a template that hides it): same GPUs, a degraded finding."""
    write_scenario(ssh_env.root / "scenario.json", box(2, busy=[0]))
    bin_dir = no_python_bin(tmp_path / "bin")
    template = f"env PATH={bin_dir} FAKE_SMI_SCENARIO={ssh_env.root / 'scenario.json'} {{cmd}}"
    common = ["--run-root", str(tmp_path / "runs"), "--topology", "0:1", "--host", ALIAS]
    shell = json.loads(cli("status", "--json", "--container", template, *common).stdout)
    full = json.loads(cli("status", "--json", *common).stdout)
    assert shell["gpus"] == full["gpus"]
    degraded = [f for f in shell["findings"] if "degraded probe (shell)" in f["message"]]
    assert degraded and "python3 is not on PATH" in degraded[0]["message"]
    assert not [f for f in full["findings"] if "degraded probe" in f["message"]]
