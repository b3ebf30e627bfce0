"""launch, kill and restart over SSH (the CLI, as a script would use it), then the fault test:
the sshd goes away mid-run and comes back; the feed says so, re-attaches, the job never stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, local_view, make_sshd
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import Disconnected, Feed
from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.ssh_connect import SshSettings

pytestmark = pytest.mark.ssh
JOB = "while :; do date +%s.%N; sleep 0.2; done"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def control(verb: str, run_root: Path, *extra: str) -> dict[str, Any]:
    res = cli(verb, "--json", "--host", ALIAS, "--run-root", str(run_root), *extra)
    assert res.stdout, res.stderr
    return json.loads(res.stdout)


def runs(run_root: Path) -> list[str]:
    return sorted(p.name for p in run_root.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_launch_kill_restart_over_ssh(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    opts = ("--command", "sleep 300", "--start-window", "1")
    first = control("launch", root, *opts)
    assert first["ok"] and first["state"] == "running" and alive(first["pid"])
    again = control("launch", root, *opts)  # pressing launch twice never starts two jobs
    assert not again["ok"] and again["refused"] and runs(root) == [first["run_id"]]
    status = json.loads(cli("status", "--json", "--host", ALIAS, "--run-root", str(root)).stdout)
    assert status["run"]["state"] in ("starting", "running")
    assert status["run"]["pgid"] == first["pgid"]
    second = control("restart", root, *opts, "--grace", "2")
    assert second["ok"] and not alive(first["pid"])
    new = second["launch"]
    assert new["run_id"] != first["run_id"] and alive(new["pid"])
    killed = control("kill", root, "--grace", "2")
    assert killed["ok"] and killed["state"] == "killed" and not alive(new["pid"])
    assert runs(root) == sorted([first["run_id"], new["run_id"]])


async def next_of(events: Any, kind: type, timeout: float) -> Any:
    async def find() -> Any:
        async for ev in events:
            if isinstance(ev, kind):
                return ev
        raise AssertionError("the feed ended")

    return await asyncio.wait_for(find(), timeout)


async def test_sshd_stopped_mid_run_then_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_sshd(tmp_path / "sshd")  # its own server: this test stops it
    server.start()
    try:
        local_view(server, monkeypatch)
        await _fault(server, tmp_path / "runs")
    finally:
        server.stop()


async def _fault(server: LoopbackSshd, root: Path) -> None:
    job = control("launch", root, "--command", JOB, "--start-window", "1")
    assert job["ok"], job
    host = HostConfig(address=ALIAS, run_root=str(root))
    t = SshTransport(ALIAS, settings=SshSettings(keepalive_interval=1, connect_timeout=3))
    events = Feed(t, host, interval=0.3, max_backoff=1.0).events()
    try:
        snap: Snapshot = await next_of(events, Snapshot, 30)
        assert snap.run is not None and snap.run.pgid == job["pgid"]
        log = Path(job["dir"]) / "output.log"
        size_before = log.stat().st_size
        server.stop()
        gone: Disconnected = await next_of(events, Disconnected, 15)
        assert "connection lost" in gone.error or "cannot connect" in gone.error
        assert not t.connected
        await asyncio.sleep(1.5)  # down for a while; the job keeps writing
        server.start()
        back: Snapshot = await next_of(events, Snapshot, 30)
    finally:
        await events.aclose()
        await t.close()
    assert t.link.connects >= 2
    assert back.run is not None and back.run.id == job["run_id"] and back.run.pgid == job["pgid"]
    assert alive(job["pid"]) and log.stat().st_size > size_before  # never stopped
    assert runs(root) == [job["run_id"]]  # no second job
    os.killpg(job["pgid"], signal.SIGKILL)


async def test_a_silent_link_is_noticed_by_keepalives(ssh_env: LoopbackSshd) -> None:
    """The server stops answering (SIGSTOP) without closing: keepalives end the connection."""
    t = SshTransport(ALIAS, settings=SshSettings(keepalive_interval=0.5, keepalive_count=2))
    events = Feed(t, HostConfig(address=ALIAS), interval=0.3, max_backoff=1.0).events()
    try:
        await next_of(events, Snapshot, 30)
        ssh_env.signal_sessions(signal.SIGSTOP)
        t0 = time.monotonic()
        gone: Disconnected = await next_of(events, Disconnected, 10)
        assert time.monotonic() - t0 < 5 and "connection lost" in gone.error
        back: Snapshot = await next_of(events, Snapshot, 30)  # a new connection
        assert back.time > 0 and t.link.connects == 2
    finally:
        ssh_env.signal_sessions(signal.SIGCONT)
        await events.aclose()
        await t.close()
