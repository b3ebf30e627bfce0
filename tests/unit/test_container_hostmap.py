"""Host-side PID mapping: GPU processes (host PIDs) placed in the container's process table."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from typing import Any

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.link.container import parse
from dflash_tui.core.link.hostmap import (
    HostPidMapper,
    HostProc,
    host_sample_command,
    map_gpu_procs,
    parse_host_sample,
)
from dflash_tui.core.link.transport import CommandResult, LocalTransport, Transport, TransportError

UUID = "GPU-0"


def proc(pid: int, pgid: int, start: int, ppid: int = 1) -> dict[str, Any]:
    return {"pid": pid, "ppid": ppid, "pgid": pgid, "sid": pgid, "state": "S",
            "start_ticks": start, "user": "root", "cmd": f"job {pid}", "nspid": [pid]}  # fmt: skip


def container_snap(host_pid: int = 4242) -> Snapshot:
    """As a probe inside a container sees it: its own PIDs; the driver's host PID on GPU 0."""
    return Snapshot.from_dict(
        {
            "time": 100.0,
            "telemetry": {"source": "nvidia-smi"},
            "gpus": [
                {"index": 0, "uuid": UUID, "util": 90, "mem_used_mib": 1000, "mem_total_mib": 80000}
            ],
            "gpu_procs": [{"pid": host_pid, "gpu_uuid": UUID, "used_mib": 1000, "name": "py"}],
            "procs": [proc(1, 1, 10, 0), proc(7, 7, 500), proc(8, 7, 510, 7)],
            "run": {"id": "r1", "dir": "/runs/r1", "pid": 7, "pgid": 7, "start_ticks": 500},
        }
    )


HOST_TEXT = """P 4242
S 4242 (py) S 4200 4230 4230 0 -1 4194560 1 0 0 0 5 1 0 0 20 0 1 0 510 100 20 1
N NSpid:\t4242\t8
C 0::/lxc/200/ns/user.slice
P 999
"""


def test_parse_host_sample() -> None:
    rows = parse_host_sample(HOST_TEXT)
    assert rows[4242] == HostProc(4242, (4242, 8), 510, "0::/lxc/200/ns/user.slice")
    assert rows[999] == HostProc(999)


def test_mapped_process_is_owned_by_the_run() -> None:
    snap = container_snap()
    topo = Topology.parse("0:1")
    assert diagnose([snap], topo).gpus[0].processes[0].owner == "unknown"  # never "orphan"
    mapped = map_gpu_procs(snap, parse_host_sample(HOST_TEXT), parse("pct:200"))
    view = diagnose([mapped], topo).gpus[0].processes[0]
    assert (view.pid, view.container_pid, view.owner) == (4242, 8, "run")


def test_no_mapping_without_proof() -> None:
    snap, pct = container_snap(), parse("pct:200")
    cases = {
        "other start time": HostProc(4242, (4242, 8), 999, ""),
        "other container": HostProc(4242, (4242, 8), 510, "0::/lxc/201/ns"),
        "a host process": HostProc(4242, (4242,), 510, ""),
        "not in the table": HostProc(4242, (4242, 77), 510, ""),
    }
    for why, row in cases.items():
        out = map_gpu_procs(snap, {4242: row}, pct)
        assert out.gpu_procs[0].container_pid is None, why
        assert diagnose([out], Topology.parse("0:1")).gpus[0].processes[0].owner == "unknown"


def test_nested_namespaces_pick_the_probes_level() -> None:
    row = HostProc(4242, (4242, 300, 8), 510, "")  # docker in an LXC: host, LXC, docker
    snap = container_snap()
    assert map_gpu_procs(snap, {4242: row}).gpu_procs[0].container_pid == 8


def test_host_sample_command_reads_this_machine() -> None:
    pid = os.getpid()
    out = subprocess.run(["sh", "-c", host_sample_command([pid, 0, -5])], capture_output=True)
    row = parse_host_sample(out.stdout.decode())[pid]
    assert row.nspid[0] == pid and row.start_ticks and row.cgroup
    assert "0" not in host_sample_command([0, -5]).split("for p in ")[1].split(";")[0]


class Stub(Transport):
    def __init__(self, reply: str | Exception) -> None:
        super().__init__()
        self.reply, self.calls = reply, []

    def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        raise NotImplementedError

    async def run(self, cmd: str, stdin: bytes | None = None, timeout: float = 30) -> CommandResult:
        self.calls.append(cmd)
        if isinstance(self.reply, Exception):
            raise self.reply
        return CommandResult(0, self.reply, "")


async def test_mapper_asks_the_host_once_per_pid() -> None:
    host = Stub(HOST_TEXT)
    mapper = HostPidMapper(host, parse("pct:200"))
    for _ in range(3):
        out = await mapper.apply(container_snap())
        assert out.gpu_procs[0].container_pid == 8
    assert len(host.calls) == 1  # cached while the PID stays on the GPU
    await mapper.apply(container_snap(5555))
    assert len(host.calls) == 2 and set(mapper.cache) == {5555}


async def test_mapper_says_why_when_the_host_side_fails() -> None:
    host = Stub(TransportError("pct: not found"))
    mapper = HostPidMapper(host, parse("pct:200"))
    out = await mapper.apply(container_snap())
    assert out.gpu_procs[0].container_pid is None
    assert any("host-side PID mapping unavailable" in e for e in out.errors)
    await mapper.apply(container_snap())
    assert len(host.calls) == 2  # a failure is not cached: asked again next sample


def test_for_transport() -> None:
    assert HostPidMapper.for_transport(LocalTransport(), None) is None
    mapper = HostPidMapper.for_transport(LocalTransport(), "pct:200")
    assert mapper is not None and mapper.host_side.wrap("x") == "x"
    assert HostPidMapper.for_transport(Stub(""), "pct:200") is None  # no way to the host
