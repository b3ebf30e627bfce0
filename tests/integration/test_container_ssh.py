"""A PID-namespace "container" (unshare --pid --fork --mount-proc) reached over SSH through a
custom template (nsenter): the probe lists container PIDs, launch and kill work inside it, and a
process in it that holds a (stand-in) GPU is owned by the run thanks to the host-side mapping."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import cli
from fakes.scenario import app, box, write_scenario
from loopback_sshd import ALIAS, LoopbackSshd
from wait_util import cli as cli_
from wait_util import timed as timed_

from dflash_train.topology import Topology
from dflash_tui.core.base.config_types import DEFAULT_INTERVAL, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.timings import START_WINDOW_S
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.ssh import SshTransport

pytestmark = pytest.mark.ssh


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError):
                continue
    return out


def host_pid_of(ns_init: int, inner: int) -> int | None:
    """The host PID of PID ``inner`` of the namespace whose init is host PID ``ns_init``."""
    want = os.readlink(f"/proc/{ns_init}/ns/pid")
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != want:
                continue
            with open(f"/proc/{entry}/status") as f:
                nspid = next(ln for ln in f if ln.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == inner:
            return int(entry)
    return None


@pytest.fixture
def pidns() -> Iterator[int]:
    """Host PID of the init (PID 1) of a fresh PID namespace with its own /proc."""
    if not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.skip("unshare/nsenter (util-linux) are needed")
    outer = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "while :; do sleep 1; done"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 5
    while not (kids := _children(outer.pid)) and outer.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if not kids:
        outer.kill()
        outer.wait()
        pytest.skip("unshare --pid --fork --mount-proc is not permitted here")
    yield kids[0]
    os.kill(kids[0], signal.SIGKILL)  # the namespace's init: the kernel ends all of it
    outer.wait(10)


def test_container_over_ssh(ssh_env: LoopbackSshd, pidns: int, tmp_path: Path) -> None:
    template = f"nsenter --target {pidns} --pid --mount {{cmd}}"
    root = tmp_path / "runs"
    base = ("--json", "--host", ALIAS, "--container", template, "--run-root", str(root))
    res = cli("launch", *base, "--command", "sleep 300", "--start-window", "1")
    job = json.loads(res.stdout)
    assert job["ok"], res.stderr
    assert job["pid"] < 100  # a PID of the namespace, not of the host
    host_pid = host_pid_of(pidns, job["pid"])
    assert host_pid is not None and host_pid != job["pid"]
    # The driver reports the HOST PID of the process that holds GPU 0.
    write_scenario(ssh_env.root / "scenario.json", box(2), [app(host_pid, gpu=0)])
    host = HostConfig(
        address=ALIAS, container=template, run_root=str(root), topology=Topology.parse("0:1")
    )
    mapped = asyncio.run(_sample(host))
    # Without the host side the PID cannot be placed: strip the mapping to see that case.
    snap = replace(
        mapped, gpu_procs=tuple(replace(g, container_pid=None) for g in mapped.gpu_procs)
    )
    pids = {p.pid for p in snap.procs}
    assert 1 in pids and job["pid"] in pids and host_pid not in pids  # container PIDs
    before = diagnose([snap], host.topology).gpus[0].processes[0]
    assert (before.pid, before.owner) == (host_pid, "unknown")  # unknown, never orphan
    after = diagnose([mapped], host.topology).gpus[0].processes[0]
    assert (after.pid, after.container_pid, after.owner) == (host_pid, job["pid"], "run")
    doc = json.loads(cli("status", *base, "--topology", "0:1").stdout)  # status maps too
    proc = doc["gpus"][0]["processes"][0]
    assert (proc["pid"], proc["container_pid"], proc["owner"]) == (host_pid, job["pid"], "run")
    killed = json.loads(cli("kill", *base, "--grace", "2").stdout)
    assert killed["ok"] and killed["state"] == "killed"
    assert host_pid_of(pidns, job["pid"]) is None


async def _sample(host: HostConfig) -> Snapshot:
    """One probe sample through the container (sample_once maps PIDs from the host side)."""
    t = make_transport(host)
    assert isinstance(t, SshTransport)
    try:
        return await sample_once(t, host)
    finally:
        await t.close()


def test_wait_inside_a_container_over_ssh(
    ssh_env: LoopbackSshd,
    pidns: int,
    tmp_path: Path,
) -> None:
    """``dflash-tui wait`` in a PID-namespace container reached through a template over SSH:
    a run that logs steps and ends well reaches first-step, then exited; one that fails quotes
    its log."""
    template = f"nsenter --target {pidns} --pid --mount {{cmd}}"
    common = ["--host", ALIAS, "--container", template, "--run-root", str(tmp_path / "runs")]
    steps = "echo 'step=1 loss=2.0 acc=0.1 tok/s=10'; sleep 5"
    assert cli_("launch", *common, "--command", steps).returncode == 0
    first, _ = timed_("wait", *common, "--until", "first-step", "--timeout", "30")
    assert first.returncode == 0 and first.stdout.startswith("first-step reached: "), first.stdout
    done, _ = timed_("wait", *common, "--until", "exited", "--timeout", "30")
    assert done.returncode == 0 and "exit 0" in done.stdout, done.stdout + done.stderr
    cli_("launch", *common, "--command", "echo 'no GPU in this container'; exit 3")
    failed, took = timed_("wait", *common, "--until", "first-step", "--timeout", "30")
    assert failed.returncode == 1 and "log: no GPU in this container" in failed.stdout
    assert took < START_WINDOW_S + DEFAULT_INTERVAL
