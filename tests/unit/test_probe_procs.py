"""The probe's process table, read from /proc: real children, odd names, vanishing processes."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.proberun import run_probe

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.probe import procs as probe
from dflash_tui.core.probe.procs import Procs

PROC_KEYS = {
    "pid", "ppid", "pgid", "sid", "state", "start_ticks", "rss_kb", "cpu_pct", "user", "cmd",
    "nspid",
}  # fmt: skip


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat fields from 1, with comm as one field (test's own reading)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    head, _, tail = text.rpartition(")")
    pid_s, _, comm = head.partition(" (")
    return ["", pid_s, comm, *tail.split()]


@pytest.fixture
def session_child() -> Iterator[subprocess.Popen[bytes]]:
    """A child in its own session whose shell starts a grandchild in the same group."""
    p = subprocess.Popen(
        ["sh", "-c", "sleep 60 & wait"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not _children(p.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    yield p
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_real_child_group_session_and_start_ticks(session_child) -> None:
    out = run_probe("--no-nvml")
    procs = {p["pid"]: p for p in out["procs"]}
    child = procs[session_child.pid]
    assert set(child) == PROC_KEYS
    f = stat_fields(session_child.pid)
    assert child["ppid"] == os.getpid()
    assert child["pgid"] == child["sid"] == session_child.pid  # setsid: a new session and group
    assert child["start_ticks"] == int(f[22])
    assert child["cmd"] == "sh -c sleep 60 & wait"
    assert child["user"] == pwd.getpwuid(os.geteuid()).pw_name
    assert child["state"] in ("S", "R") and child["rss_kb"] > 0
    assert child["nspid"][0] == session_child.pid
    assert child["cpu_pct"] is None  # no previous sample in --once
    (grandchild,) = _children(session_child.pid)
    gc = procs[grandchild]
    assert (gc["ppid"], gc["pgid"], gc["sid"]) == (session_child.pid,) * 3
    assert gc["cmd"] == "sleep 60"
    assert out["clk_tck"] == os.sysconf("SC_CLK_TCK")
    btime = next(ln for ln in Path("/proc/stat").read_text().splitlines() if ln.startswith("btime"))
    assert out["boot_time"] == float(btime.split()[1])
    snap = Snapshot.from_dict(out)
    assert snap.proc(session_child.pid) is not None and snap.errors == ()


def test_no_kernel_threads(session_child) -> None:
    procs = Procs().read([])
    assert all(p["cmd"] != "[kthreadd]" for p in procs)
    kthreads = [n for n in os.listdir("/proc") if n.isdigit() and _is_kthread(n)]
    assert not {int(n) for n in kthreads} & {p["pid"] for p in procs}


def _is_kthread(name: str) -> bool:
    try:
        f = stat_fields(int(name))
    except OSError:
        return False
    return bool(int(f[9]) & probe.PF_KTHREAD)


def test_comm_with_parens_and_spaces(tmp_path: Path) -> None:
    exe = tmp_path / "a) (b c"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    p = subprocess.Popen([str(exe), "30"])
    try:
        time.sleep(0.2)
        (mine,) = [x for x in Procs().read([]) if x["pid"] == p.pid]
        assert mine["ppid"] == os.getpid() and mine["state"] in ("S", "R")
        assert mine["start_ticks"] == int(stat_fields(p.pid)[22])
        assert mine["cmd"] == f"{exe} 30"
    finally:
        p.kill()
        p.wait()


def test_zombie_shows_comm_and_state_z() -> None:
    p = subprocess.Popen(["sleep", "0"])
    deadline = time.monotonic() + 10
    while stat_fields(p.pid)[3] != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        (z,) = [x for x in Procs().read([]) if x["pid"] == p.pid]
        assert z["state"] == "Z" and z["cmd"] == "[sleep]"
    finally:
        p.wait()


def test_cpu_pct_from_tick_deltas() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        table = Procs()
        first = {p["pid"]: p for p in table.read([])}
        assert first[busy.pid]["cpu_pct"] is None
        time.sleep(0.6)
        second = {p["pid"]: p for p in table.read([])}
        assert second[busy.pid]["cpu_pct"] > 5.0  # a spinning loop (2 shared cores here)
        assert second[os.getpid()]["cpu_pct"] is not None
    finally:
        busy.kill()
        busy.wait()


def test_vanished_process_is_skipped_silently() -> None:
    p = subprocess.Popen(["true"])
    p.wait()  # reaped: its /proc entry is gone
    with pytest.raises(FileNotFoundError):
        Procs().one(str(p.pid))
    errors: list[str] = []
    assert p.pid not in {x["pid"] for x in Procs().read(errors)}
    assert errors == []


def test_churn_never_errors() -> None:
    """Processes start and exit while the table is read: never an error, never a crash."""
    churn = subprocess.Popen(
        ["sh", "-c", "i=0; while [ $i -lt 300 ]; do true & i=$((i+1)); done; wait"]
    )
    table, errors = Procs(), []
    try:
        while churn.poll() is None:
            assert table.read(errors)
    finally:
        churn.wait()
    assert errors == []


def fake_proc(root: Path, pid: int, stat: str | None, status: str = "", cmd: bytes = b"") -> None:
    d = root / str(pid)
    d.mkdir()
    if stat is not None:
        (d / "stat").write_text(stat)
        (d / "status").write_text(status)
        (d / "cmdline").write_bytes(cmd)


def _stat(pid: int, comm: str, flags: int = 0x400100, ppid: int = 1) -> str:
    rest = ["S", ppid, pid, pid, 0, -1, flags] + [0] * 4 + [150, 50] + [0] * 6 + [7777, 0, 25]
    return f"{pid} ({comm}) " + " ".join(map(str, rest)) + " 0 0\n"


def test_fake_proc_tree_edge_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(tmp_path, 100, _stat(100, "ok"), "Uid:\t0\t0\t0\t0\nNSpid:\t100\t7\n", b"a\0b c\0")
    fake_proc(tmp_path, 101, None)  # vanished before its stat could be read
    fake_proc(tmp_path, 102, "102 (trunc) S 1")  # a malformed stat: skipped
    fake_proc(tmp_path, 103, _stat(103, "kworker/0:1", flags=0x208040, ppid=2))  # kernel thread
    fake_proc(tmp_path, 104, _stat(104, "x) (y"), "Uid:\t54321\t54321\t0\t0\n")
    fake_proc(tmp_path, 105, _stat(105, "denied"))
    fake_proc(tmp_path, 106, _stat(106, "denied2"))
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text("btime 5\n")
    real = probe.read_bytes

    def read(path: str, limit: int = 1 << 20, page: bool = False) -> bytes:
        if "/105/" in path or "/106/" in path:
            raise PermissionError(13, "Permission denied")
        return real(path, limit, page)

    monkeypatch.setattr(probe, "read_bytes", read)
    errors: list[str] = []
    procs = {p["pid"]: p for p in Procs(str(tmp_path)).read(errors)}
    assert sorted(procs) == [100, 104]
    ok = procs[100]
    assert ok["cmd"] == "a b c" and ok["nspid"] == [100, 7] and ok["user"] == "root"
    assert ok["start_ticks"] == 7777 and ok["rss_kb"] == 25 * os.sysconf("SC_PAGE_SIZE") // 1024
    assert procs[104]["cmd"] == "[x) (y]" and procs[104]["user"] == "54321"
    assert procs[104]["nspid"] == []
    assert errors == ["unreadable /proc entries: 2, e.g. 105 (Permission denied)"] or errors == [
        "unreadable /proc entries: 2, e.g. 106 (Permission denied)"
    ]
