"""Launch, kill and restart inside a PID-namespace "container", through container wrappers.

The container is `unshare --pid --fork --mount-proc` (root here) with a small reaping init;
commands reach it through a template (`nsenter --target PID --pid --mount {cmd}`) and through
the `pct:ID` and `docker:NAME` presets, played by stand-in `pct` and `docker` executables that
check their arguments and enter the same namespace. Also: the same under BusyBox sh.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from support import busybox_bin

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.control.restart import restart_latest
from dflash_tui.core.control.script import fetch_run
from dflash_tui.core.link.container import wrapper
from dflash_tui.core.link.transport import LocalTransport

FAST = {"start_window": 0.3, "poll": 0.05}
# PID 1 of the container: reaps whatever is reparented to it, as a real init does.
REAPER = (
    "import os, time\n"
    "while True:\n"
    "    try:\n"
    "        os.wait()\n"
    "    except ChildProcessError:\n"
    "        time.sleep(0.2)\n"
)


def _can_unshare() -> bool:
    if not shutil.which("unshare") or not shutil.which("nsenter"):
        return False
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", "true"]
    return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0


pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not _can_unshare(), reason="needs unshare --pid (root)"
)


class PidNs:
    """A PID namespace whose init is ``init`` (a host PID); ``procs()`` lists its processes."""

    def __init__(self, outer: subprocess.Popen[bytes], init: int) -> None:
        self.outer, self.init = outer, init
        self.ns = os.readlink(f"/proc/{init}/ns/pid")

    def procs(self, zombies: bool = False) -> list[tuple[int, str]]:
        """(host pid, state) of every live process in the namespace but its init."""
        out = []
        for e in Path("/proc").iterdir():
            if not e.name.isdigit() or int(e.name) == self.init:
                continue
            try:
                if os.readlink(f"{e}/ns/pid") != self.ns:
                    continue
                state = (e / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if zombies or state != "Z":
                out.append((int(e.name), state))
        return out

    def inner_pid(self, host_pid: int) -> int:
        """The PID a host process has inside the namespace (NSpid's last field)."""
        try:
            lines = Path(f"/proc/{host_pid}/status").read_text().splitlines()
        except OSError:
            return -1  # gone meanwhile
        return next((int(ln.split()[-1]) for ln in lines if ln.startswith("NSpid:")), -1)

    def has(self, inner: int) -> bool:
        """Is ``inner`` the PID, inside the namespace, of one of its live processes?"""
        return any(self.inner_pid(p) == inner for p, _ in self.procs())


@pytest.fixture(scope="module")
def pidns() -> Iterator[PidNs]:
    outer = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", REAPER],
        start_new_session=True,
    )
    children = Path(f"/proc/{outer.pid}/task/{outer.pid}/children")
    init = 0
    for _ in range(200):
        kids = children.read_text().split() if children.exists() else []
        if kids:
            init = int(kids[0])
            break
        time.sleep(0.02)
    assert init, "the namespace's init did not start"
    try:
        yield PidNs(outer, init)
    finally:
        os.killpg(outer.pid, signal.SIGKILL)  # its own session: unshare and the init
        outer.wait()


@pytest.fixture
async def ns_transport(pidns: PidNs) -> AsyncIterator[LocalTransport]:
    t = LocalTransport(wrapper(f"nsenter --target {pidns.init} --pid --mount {{cmd}}"))
    yield t


def host(root: Path, command: str, **kw: object) -> HostConfig:
    return HostConfig(command=command, run_root=str(root), **kw)  # type: ignore[arg-type]


async def test_launch_kill_and_restart_inside_the_namespace(
    ns_transport: LocalTransport, pidns: PidNs, tmp_path: Path
) -> None:
    t = ns_transport
    job = (
        "echo init=$(tr '\\0' ' ' < /proc/1/cmdline); "
        "sleep 300 & (sleep 300 &); (sh -c \"trap '' TERM; exec sleep 300\" &); "
        "trap '' TERM; while :; do sleep 0.1; done"
    )
    h = host(tmp_path / "runs", job)
    res = await launch(t, h, **FAST)
    assert res.ok, res
    log = (Path(res.dir or "") / "output.log").read_text()
    assert "init=" in log and "os.wait()" in log  # PID 1 it sees is the container's init
    assert res.pid is not None and pidns.has(res.pid)  # a PID of the namespace, not the host's
    assert len(pidns.procs()) >= 5
    k = await kill_latest(t, h, grace=0.5, poll=0.05)
    assert k.ok and k.signals == ("TERM", "KILL"), k
    assert pidns.procs() == []  # the whole group, double-forked and TERM-proof ones too

    r1 = await launch(t, host(tmp_path / "runs", "echo first; exec sleep 300"), **FAST)
    old_log = Path(r1.dir or "") / "output.log"
    r2 = await restart_latest(
        t, host(tmp_path / "runs", "echo second; exec sleep 300"), grace=1, **FAST
    )
    assert r2.ok and r2.launch is not None and r2.launch.run_id != r1.run_id, r2
    assert old_log.read_text().startswith("first")
    assert (await fetch_run(t, h.run_root)).state() in ("starting", "running")
    assert len(pidns.procs()) == 2  # the new wrapper and its sleep; nothing of the old run
    assert (await kill_latest(t, h, grace=1, poll=0.05)).ok and pidns.procs() == []


async def test_a_group_whose_leader_is_reaped_is_still_the_run(
    ns_transport: LocalTransport, pidns: PidNs, tmp_path: Path
) -> None:
    # The wrapper (session leader) ends and the container's init reaps it; a background child
    # lives on in the run's group. The run marker in its environment proves it is the run's.
    h = host(tmp_path / "runs", "sleep 300 & sleep 0.4; exit 0")
    t = ns_transport
    assert (await launch(t, h, start_window=0.2, poll=0.05)).ok
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        rep = await fetch_run(t, h.run_root)
        assert rep.record is not None
        gone = not any(pidns.inner_pid(p) == rep.record.pid for p, _ in pidns.procs(True))
        # On a loaded machine the job's own shell can still be on its way out when the
        # wrapper's exit code is there: wait for it too (a member that stays fails below).
        only_sleep = [p.cmd for p in rep.members] == ["sleep"]
        if rep.record.exit_code is not None and gone and only_sleep:
            break  # the wrapper ended and was reaped: its PID, the PGID, has no process
        await asyncio.sleep(0.05)
    assert rep.record.exit_code == 0 and gone
    assert rep.verdict == "ours" and [p.cmd for p in rep.members] == ["sleep"], rep
    k = await kill_latest(t, h, grace=1, poll=0.05)
    assert k.ok and k.signals == ("TERM",) and pidns.procs() == []


def _stand_in(bin_dir: Path, name: str, check: str, init: int) -> None:
    """An executable `name` that checks its arguments, then runs the rest in the namespace."""
    path = bin_dir / name
    path.write_text(
        "#!/bin/sh\n"
        f"{check}\n"
        f'exec nsenter --target {init} --pid --mount "$@"\n'
    )  # fmt: skip
    path.chmod(0o755)


@pytest.fixture
def presets(tmp_path: Path, pidns: PidNs, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pct_check = (
        'if [ "$1 $2 $3" = "exec 201 --" ]; then echo "pct: container 201 not running" >&2; '
        "exit 2; fi\n"
        '[ "$1 $2 $3" = "exec 200 --" ] || { echo "pct: bad arguments: $*" >&2; exit 2; }\n'
        "shift 3"
    )
    docker_check = (
        '[ "$1 $2 $3" = "exec -i trainer" ] || { echo "docker: bad arguments: $*" >&2; exit 2; }\n'
        "shift 3"
    )
    _stand_in(bin_dir, "pct", pct_check, pidns.init)
    _stand_in(bin_dir, "docker", docker_check, pidns.init)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_preset_strings() -> None:
    pct, docker = wrapper("pct:200"), wrapper("docker:trainer")
    tpl = wrapper("ssh-free-ns {cmd} --x")
    assert pct is not None and docker is not None and tpl is not None
    cmd = "sh -s -- state '/r o/o t'"
    assert pct(cmd) == "pct exec 200 -- sh -c 'sh -s -- state '\"'\"'/r o/o t'\"'\"''"
    assert docker(cmd) == "docker exec -i trainer sh -c 'sh -s -- state '\"'\"'/r o/o t'\"'\"''"
    assert tpl("echo $(x)") == "ssh-free-ns sh -c 'echo $(x)' --x"


@pytest.mark.parametrize("spec", ["pct:200", "docker:trainer"])
async def test_presets_launch_and_kill_inside_the_container(
    spec: str, presets: Path, pidns: PidNs, tmp_path: Path
) -> None:
    t = LocalTransport(wrapper(spec))
    h = host(tmp_path / "runs", "trap '' TERM; while :; do sleep 0.1; done")
    res = await launch(t, h, **FAST)
    assert res.ok and pidns.has(res.pid or 0), res
    k = await kill_latest(t, h, grace=0.3, poll=0.05)
    assert k.ok and k.signals == ("TERM", "KILL"), k
    # The control script's own shell runs in the namespace too (through the wrapper) and may
    # still be exiting when kill returns on a loaded machine: nothing may be left after that.
    deadline = time.monotonic() + 5
    while pidns.procs() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert pidns.procs() == [], k


async def test_a_container_that_is_not_running_is_reported_at_once(
    presets: Path, tmp_path: Path
) -> None:
    res = await launch(LocalTransport(wrapper("pct:201")), host(tmp_path / "runs", "true"), **FAST)
    assert not res.ok and "pct: container 201 not running" in (res.error or ""), res


@pytest.fixture
def busybox_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of BusyBox applets only (sh, setsid, kill, date ...), as on a minimal image."""
    bin_dir = busybox_bin(tmp_path)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


async def test_the_same_under_busybox_sh(busybox_path: Path, tmp_path: Path) -> None:
    t = LocalTransport()
    runs = tmp_path / "runs"
    res = await launch(t, host(runs, "nonexistent-command"), start_window=2, poll=0.05)
    assert res.state == "launch-failed" and "nonexistent-command" in (res.error or ""), res
    h = host(runs, "sleep 300 & (sleep 300 &); trap '' TERM; while :; do sleep 0.1; done")
    res = await launch(t, h, **FAST)
    assert res.ok, res
    assert os.readlink(f"/proc/{res.pid}/exe").endswith("busybox")
    k = await kill_latest(t, h, grace=0.3, poll=0.05, check_gpu=False)
    assert k.ok and k.signals == ("TERM", "KILL") and k.state == "killed", k
    # BusyBox date has no %N: times are whole seconds, so the job outlives one.
    res = await launch(t, host(runs, "sleep 1.2; exit 3"), **FAST)
    assert res.ok
    time.sleep(1.5)
    rep = await fetch_run(t, str(runs))
    assert rep.state(0.3) == "exited" and rep.record.exit_code == 3  # type: ignore[union-attr]
