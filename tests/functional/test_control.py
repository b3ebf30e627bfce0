"""Run control with real processes and process groups on this machine (no mocks).

Short start windows and grace periods keep the suite fast; every job a test starts is killed
by its recorded group at the end (never by name).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.kill import kill, kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.control.policy import Decision
from dflash_tui.core.control.restart import clear_compile_cache, restart, restart_latest, supervise
from dflash_tui.core.control.script import ControlError, fetch_run, run_script
from dflash_tui.core.link.transport import LocalTransport

FAST = {"start_window": 0.3, "poll": 0.05}


def stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, pgid, sid, start_ticks) of a live process, None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = text.rsplit(")", 1)[1].split()
    return f[0], int(f[2]), int(f[3]), int(f[19])


def alive(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[0] != "Z"


def group(pgid: int) -> list[int]:
    """Live (non-zombie) members of a process group, read from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := stat(int(entry.name))) and s[1] == pgid and s[0] != "Z":
            out.append(int(entry.name))
    return out


def wait_for(cond, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


async def wait_state(t: LocalTransport, h: HostConfig, want: str, timeout: float = 5.0) -> str:
    end = time.monotonic() + timeout
    state = ""
    while time.monotonic() < end:
        state = (await fetch_run(t, h.run_root)).state(FAST["start_window"])
        if state == want:
            break
        await asyncio.sleep(0.05)
    return state


@pytest.fixture
def t() -> LocalTransport:
    return LocalTransport()


@pytest.fixture
async def runs(tmp_path: Path, t: LocalTransport) -> AsyncIterator[Path]:
    root = tmp_path / "runs"
    yield root
    # Clean up whatever a failed test left running: the recorded groups, verified, only.
    for d in sorted(root.glob("2*")):
        h = HostConfig(run_root=str(root))
        await kill(t, h, run_id=d.name, grace=0.2, poll=0.05, check_gpu=False)


def host(root: Path, command: str, **kw: object) -> HostConfig:
    return HostConfig(command=command, run_root=str(root), **kw)  # type: ignore[arg-type]


@pytest.fixture
def foreign() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Process groups that belong to no run; reaped (by their own PID) at the end."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


async def test_launch_records_the_run_and_kill_stops_it(t: LocalTransport, runs: Path) -> None:
    h = host(runs, 'echo "dir=$DFLASH_RUN_DIR events=$DFLASH_EVENTS"; exec sleep 30')
    res = await launch(t, h, **FAST)
    assert res.ok and res.state == "running", res
    d = Path(res.dir or "")
    assert d.parent == runs and len(res.run_id or "") == len("20261202-090000-0a0b")
    for f in ("output.log", "command", "workdir", "env", "pid", "started_at"):
        assert (d / f).exists(), f
    assert (d / "command").read_text() == h.command
    pid, pgid, ticks = (int(x) for x in (d / "pid").read_text().split())
    assert pid == pgid == res.pgid and stat(pid) is not None and stat(pid)[3] == ticks  # type: ignore[index]
    assert stat(pid)[2] == pid  # type: ignore[index]  # its own session (setsid)
    assert f"dir={d} events={d}/events.jsonl" in (d / "output.log").read_text()
    k = await kill_latest(t, h, grace=3, poll=0.05)
    assert k.ok and k.signals == ("TERM",) and k.state == "killed", k
    assert not group(pgid)
    assert (d / "kill_requested").exists()
    assert (d / "exit").read_text().split()[0] == "143"  # the wrapper saw SIGTERM (128+15)
    again = await kill_latest(t, h, grace=3, poll=0.05)
    assert again.ok and again.signals == () and "not running" in again.message


async def test_a_job_that_ignores_sigterm_is_killed_by_escalation(
    t: LocalTransport, runs: Path
) -> None:
    h = host(runs, "trap '' TERM; while :; do sleep 0.1; done")
    res = await launch(t, h, **FAST)
    assert res.ok, res
    seen: list[str] = []
    k = await kill_latest(t, h, grace=0.5, poll=0.05, progress=lambda p: seen.append(p.phase))
    assert k.signals == ("TERM", "KILL") and k.ok and not k.survivors, k
    assert "term" in seen
    assert not group(res.pgid or 0)
    assert k.state == "killed"
    assert not (Path(res.dir or "") / "exit").exists()  # SIGKILL took the wrapper too


async def test_grandchildren_and_double_forked_ones_all_die(t: LocalTransport, runs: Path) -> None:
    pids = runs.parent / "pids"
    job = (
        f"sleep 300 & echo $! >> {pids}; "
        f"(sleep 300 & echo $! >> {pids}); "  # double fork: reparented, same group
        f"(sh -c \"trap '' TERM; exec sleep 300\" & echo $! >> {pids}); "  # ignores TERM
        "exec sleep 300"
    )
    res = await launch(t, host(runs, job), **FAST)
    assert res.ok, res
    assert wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 3)
    kids = [int(x) for x in pids.read_text().split()]
    assert all(alive(p) for p in kids)
    k = await kill_latest(t, host(runs, job), grace=0.5, poll=0.05)
    assert k.ok and "KILL" in k.signals, k
    assert not any(alive(p) for p in kids)
    assert not group(res.pgid or 0)
    assert set(kids) <= k.pids


async def test_exit_3_is_exited_with_code_3(t: LocalTransport, runs: Path) -> None:
    h = host(runs, "sleep 0.6; exit 3")
    assert (await launch(t, h, **FAST)).ok
    assert await wait_state(t, h, "exited") == "exited"
    rec = (await fetch_run(t, h.run_root)).record
    assert rec is not None and rec.exit_code == 3


async def test_killed_by_signal_9_is_killed(t: LocalTransport, runs: Path) -> None:
    h = host(runs, "sleep 0.6; kill -9 $$")
    assert (await launch(t, h, **FAST)).ok
    assert await wait_state(t, h, "killed") == "killed"
    rec = (await fetch_run(t, h.run_root)).record
    assert rec is not None and rec.exit_code == 137


async def test_a_missing_command_fails_at_once_with_the_shell_error(
    t: LocalTransport, runs: Path
) -> None:
    t0 = time.monotonic()
    res = await launch(t, host(runs, "nonexistent-command --flag"), start_window=3, poll=0.05)
    assert time.monotonic() - t0 < 2.5  # not after the start window: at once
    assert not res.ok and res.state == "launch-failed", res
    assert "nonexistent-command" in (res.error or "") and "not found" in (res.error or "")
    d = Path(res.dir or "")
    assert "not found" in (d / "launch_error").read_text()
    assert "not found" in (d / "output.log").read_text()
    assert any("not found" in ln for ln in res.log_tail)


async def test_a_quick_crash_and_a_bad_workdir_are_launch_failed(
    t: LocalTransport, runs: Path
) -> None:
    res = await launch(t, host(runs, "echo boom >&2; exit 3"), start_window=3, poll=0.05)
    assert res.state == "launch-failed" and res.exit_code == 3, res
    assert "boom" in res.log_tail
    res = await launch(t, host(runs, "sleep 30", workdir=str(runs / "nowhere")), **FAST)
    assert res.state == "launch-failed" and "nowhere" in (res.error or ""), res


async def test_two_concurrent_launches_start_one_job(t: LocalTransport, runs: Path) -> None:
    h = host(runs, "exec sleep 30")
    a, b = await asyncio.gather(launch(t, h, **FAST), launch(t, h, **FAST))
    assert sorted([a.ok, b.ok]) == [False, True], (a, b)
    won, lost = (a, b) if a.ok else (b, a)
    assert lost.refused and lost.run_id == won.run_id
    assert len(list(runs.glob("2*"))) == 1
    # A third launch, later, is refused too while the run is alive.
    third = await launch(t, h, **FAST)
    assert third.refused and "kill or restart" in third.message


async def test_a_reused_pgid_is_never_signalled(
    t: LocalTransport, runs: Path, foreign: list[subprocess.Popen[bytes]]
) -> None:
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    foreign.append(other)
    assert wait_for(lambda: stat(other.pid) is not None)
    ticks = stat(other.pid)[3]  # type: ignore[index]
    d = runs / "20200101-000000-0001"
    d.mkdir(parents=True)
    (d / "pid").write_text(f"{other.pid} {other.pid} {ticks - 1}\n")  # another start time
    h = host(runs, "exec sleep 30")
    assert (await fetch_run(t, h.run_root)).verdict == "reused"
    k = await kill_latest(t, h, grace=0.2, poll=0.05)
    assert k.refused and not k.ok and "nothing was signalled" in k.message
    assert alive(other.pid) and not (d / "kill_requested").exists()
    # Even asked directly, control.sh checks before it signals.
    rep = await run_script(t, "signal", h.run_root, d.name, "KILL")
    assert rep.verdict == "reused" and not rep.signalled and alive(other.pid)
    # Not alive as far as launch is concerned: a new run may start.
    assert (await launch(t, h, **FAST)).ok


async def test_a_leaderless_group_without_the_run_marker_is_not_signalled(
    t: LocalTransport, runs: Path
) -> None:
    # The leader exits and leaves a child in its group and session: a PGID we cannot tell
    # from ours by the leader's start time, but its processes do not carry DFLASH_RUN_DIR.
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 30 >/dev/null & echo $!"],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    child = int(leader.communicate()[0])
    ticks = stat(child)[3]  # type: ignore[index]
    d = runs / "20200101-000000-0002"
    d.mkdir(parents=True)
    (d / "pid").write_text(f"{leader.pid} {leader.pid} {ticks}\n")
    h = host(runs, "exec sleep 30")
    try:
        k = await kill_latest(t, h, grace=0.2, poll=0.05)
        assert k.refused and alive(child), k
    finally:
        os.kill(child, signal.SIGKILL)


async def test_restart_replaces_the_run(t: LocalTransport, runs: Path, tmp_path: Path) -> None:
    cache = tmp_path / "inductor-cache"
    (cache / "sub").mkdir(parents=True)
    h = host(runs, "echo line-from-$DFLASH_RUN_DIR; exec sleep 30", compile_cache=str(cache))
    old = await launch(t, h, **FAST)
    assert old.ok
    old_log = Path(old.dir or "") / "output.log"
    before = old_log.read_text()
    phases: list[str] = []
    r = await restart_latest(
        t, h, grace=2, clear_cache=True, progress=lambda p: phases.append(p.phase), **FAST
    )
    assert r.ok and r.launch is not None and r.kill is not None, r
    assert not group(old.pgid or 0)
    assert r.launch.run_id != old.run_id and (r.launch.run_id or "") > (old.run_id or "")
    assert old_log.read_text().startswith(before) and "line-from-" in before  # kept, not reused
    assert alive(r.launch.pid or 0) and not cache.exists() and r.cache
    assert (await fetch_run(t, h.run_root)).record.id == r.launch.run_id  # type: ignore[union-attr]
    assert "starting" in phases


async def test_progress_and_cancel_during_the_grace_period(t: LocalTransport, runs: Path) -> None:
    h = host(runs, "trap '' TERM; while :; do sleep 0.1; done")
    res = await launch(t, h, **FAST)
    cancel = asyncio.Event()
    remaining: list[int] = []

    def progress(p) -> None:  # type: ignore[no-untyped-def]
        remaining.append(len(p.remaining))
        cancel.set()

    k = await kill_latest(t, h, grace=5, poll=0.05, progress=progress, cancel=cancel)
    assert k.cancelled and not k.ok and remaining and remaining[0] >= 1
    assert group(res.pgid or 0)  # TERM was ignored and KILL never sent
    assert (await kill_latest(t, h, grace=0.2, poll=0.05)).ok


async def test_input_runs_exactly_as_given_or_is_refused(
    t: LocalTransport, runs: Path, tmp_path: Path
) -> None:
    weird = tmp_path / "we ird'$(touch PWNED1);\"x"
    weird.mkdir()
    cmd = "printf '[%s]\\n' \"a b\" 'c\"d' '$(touch PWNED2)' ';' \"$V\"; pwd"
    env = (("V", "it's $(touch PWNED3) `x` ;"),)
    h = host(runs / "root with space", cmd, workdir=str(weird), env=env)
    res = await launch(t, h, start_window=0.2, poll=0.05)
    assert res.state == "exited" and res.exit_code == 0, res
    log = (Path(res.dir or "") / "output.log").read_text().splitlines()
    assert log == [
        "[a b]",
        '[c"d]',
        "[$(touch PWNED2)]",
        "[;]",
        "[it's $(touch PWNED3) `x` ;]",
        str(weird),
    ]
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    for bad in (host(runs, "echo a\nrm -rf /tmp/x"), host(runs, "true", workdir="/tmp\n/x")):
        r = await launch(t, bad, **FAST)
        assert not r.ok and "newline" in (r.error or ""), r
    r = await launch(t, host(runs, "true", env=(("A;B", "x"),)), **FAST)
    assert not r.ok and "not a variable name" in (r.error or "")
    r = await launch(t, host(Path("$HOME/$(touch PWNED4)"), "true"), **FAST)
    assert not r.ok and "only ~ and $HOME" in (r.error or "")
    assert not list(Path.cwd().glob("PWNED*")) and not list(Path.home().glob("PWNED*"))


async def test_retention_prunes_old_runs_but_never_a_live_one(
    t: LocalTransport, runs: Path, foreign: list[subprocess.Popen[bytes]]
) -> None:
    first = await launch(t, host(runs, "true"), start_window=0.1, poll=0.05)
    # An older run that is still alive (its group is a real one, with the right start time).
    live = subprocess.Popen(["sleep", "30"], start_new_session=True)
    foreign.append(live)
    assert wait_for(lambda: stat(live.pid) is not None)
    old_live = runs / "20000101-000000-0000"
    old_live.mkdir(parents=True)
    (old_live / "pid").write_text(f"{live.pid} {live.pid} {stat(live.pid)[3]}\n")  # type: ignore[index]
    ids = [first.run_id]
    for _ in range(3):
        res = await launch(t, host(runs, "true"), start_window=0.1, poll=0.05, keep=3)
        assert res.ok, res
        ids.append(res.run_id)
    # Three kept: the live one (oldest, but alive), then the two newest.
    assert sorted(p.name for p in runs.glob("2*")) == [old_live.name, ids[-2], ids[-1]]


async def test_a_stale_lock_is_broken_and_a_held_one_waited_for(
    t: LocalTransport, runs: Path
) -> None:
    lock = runs / ".lock"
    lock.mkdir(parents=True)
    (lock / "pid").write_text("999999999 1\n")  # owner long gone
    assert (await launch(t, host(runs, "true"), start_window=0.1, poll=0.05)).ok
    assert not lock.exists()
    lock.mkdir()
    me = stat(os.getpid())
    (lock / "pid").write_text(f"{os.getpid()} {me[3]}\n")  # type: ignore[index]
    res = await launch(t, host(runs, "true"), start_window=0.1, lock_wait=0.3)
    assert not res.ok and "holds the lock" in (res.error or ""), res
    assert lock.exists()


async def test_compile_cache_is_only_removed_where_allowed(
    t: LocalTransport, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    h = HostConfig(run_root=str(tmp_path / "runs"), compile_cache=str(cache))
    assert "cleared" in await clear_compile_cache(t, h)
    assert not cache.exists()
    assert "no compile cache" in await clear_compile_cache(t, h)
    for bad in ("relative/x", "/tmp/../etc", "/", "/etc"):
        with pytest.raises(ControlError):
            await clear_compile_cache(t, HostConfig(compile_cache=bad))
    # control.sh refuses on its own too: outside /tmp and not the configured path.
    rep = await run_script(t, "clear-cache", "/etc/hostname", "")
    assert rep.errors and "refusing" in rep.errors[0] and Path("/etc/hostname").exists()
    rep = await run_script(t, "clear-cache", "/tmp//x", "")
    assert rep.errors


async def test_a_second_supervisor_reads_the_same_run(t: LocalTransport, runs: Path) -> None:
    h = host(runs, "exec sleep 30")
    res = await launch(t, h, **FAST)
    await t.close()  # the first supervisor goes away; the job does not depend on it
    other = await fetch_run(LocalTransport(), h.run_root)
    assert other.record is not None and other.record.id == res.run_id
    assert other.state() in ("starting", "running") and alive(res.pid or 0)


async def test_kill_reports_gpu_memory_and_restart_waits_for_its_release(
    t: LocalTransport,
    runs: Path,
    fake_smi,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from fakes.scenario import app, box, gpu

    def gpus(used: int) -> list[dict[str, str]]:
        g = box(8)
        g[5] = gpu(5, util=90, mem_used=used)
        return g

    h = host(runs, "exec sleep 30")
    res = await launch(t, h, **FAST)
    job = max(p.pid for p in (await fetch_run(t, h.run_root)).members)
    fake_smi.write(gpus(70_000), [app(job, gpu=5, used_mib=70_000)])
    # The driver still lists the process after it died (as it does for a D-state one).
    r = await restart_latest(t, h, grace=1, release_timeout=0.5, **FAST)
    assert not r.ok and r.launch is None, r
    assert "GPU 5" in r.message and "68.4 GiB" in r.message and "nothing was launched" in r.message
    assert len(list(runs.glob("2*"))) == 1 and not group(res.pgid or 0)

    res = await launch(t, h, **FAST)
    job = max(p.pid for p in (await fetch_run(t, h.run_root)).members)
    fake_smi.write(gpus(70_000), [app(job, gpu=5, used_mib=70_000)])
    k = await kill_latest(t, h, grace=1, poll=0.05)
    assert [(x.gpu, x.pid, x.used_mib) for x in k.gpu_held] == [(5, job, 70_000)], k
    assert "still hold 68.4 GiB" in k.message

    res = await launch(t, h, **FAST)
    job = max(p.pid for p in (await fetch_run(t, h.run_root)).members)
    fake_smi.write(gpus(70_000), [app(job, gpu=5, used_mib=70_000)])
    seen: list[str] = []

    def progress(p) -> None:  # type: ignore[no-untyped-def]
        seen.append(p.message)
        if p.phase == "release" and len([m for m in seen if "release" in m]) == 1:
            fake_smi.write(gpus(30_000))  # the process is gone, its memory not yet back
        elif p.phase == "release":
            fake_smi.write(gpus(0))

    r = await restart_latest(t, h, grace=1, release_timeout=10, progress=progress, **FAST)
    assert r.ok and r.launch is not None and r.launch.run_id != res.run_id, r
    released = [m for m in seen if "waiting for release" in m]
    assert any("pid" in m and "68.4 GiB" in m for m in released)
    assert any("GPU 5 holds 29.3 GiB" in m for m in released)


async def test_auto_restart_retries_a_crashing_run_then_gives_up(
    t: LocalTransport, runs: Path
) -> None:
    h = host(runs, "sleep 1.5; exit 1")  # well past start_window, even under load
    policy = RestartPolicy(enabled=True, retries=2, backoff_s=0.1, max_backoff_s=0.2)
    assert (await launch(t, h, start_window=0.2, poll=0.05)).ok
    decisions: list[Decision] = []
    launches = []
    final = await asyncio.wait_for(
        supervise(
            t, h, policy, asyncio.Event(), on_decision=decisions.append,
            on_launch=launches.append, start_window=0.2, poll=0.05,
        ),
        20,
    )  # fmt: skip
    assert final is not None and final.action == "fatal" and "gave up after 2" in final.message
    assert len(launches) == 2 and all(r.ok for r in launches)
    assert [d.failures for d in decisions if d.action == "restart"] == [1, 2]
    assert len(list(runs.glob("2*"))) == 3  # the first run and two restarts, each kept


async def test_auto_restart_leaves_a_success_and_a_requested_stop_alone(
    t: LocalTransport, runs: Path
) -> None:
    policy = RestartPolicy(enabled=True, backoff_s=0.1)
    stop = asyncio.Event()

    def until_settled(d: Decision) -> None:
        if d.action in ("done", "stopped"):
            stop.set()

    for cmd, want in (("sleep 1.5; exit 0", "done"), ("exec sleep 30", "stopped")):
        h = host(runs, cmd)
        assert (await launch(t, h, start_window=0.2, poll=0.05)).ok
        stop.clear()
        run = asyncio.ensure_future(
            supervise(t, h, policy, stop, on_decision=until_settled, start_window=0.2, poll=0.05)
        )
        if want == "stopped":  # killed while the supervisor watches
            await asyncio.sleep(0.3)
            assert (await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)).ok
        final = await asyncio.wait_for(run, 60)  # seconds unloaded; a loaded machine is slower
        assert final is not None and final.action == want, final
    assert len(list(runs.glob("2*"))) == 2  # nothing was relaunched


async def test_auto_restart_never_relaunches_a_crash_from_before_it_started(
    t: LocalTransport, runs: Path
) -> None:
    h = host(runs, "exit 3")
    await launch(t, h, start_window=0.2, poll=0.05)
    await asyncio.sleep(1.1)  # the crash is in the past (second-resolution clocks)
    stop = asyncio.Event()
    seen: list[Decision] = []
    policy = RestartPolicy(enabled=True, backoff_s=0.1)
    task = asyncio.ensure_future(
        supervise(t, h, policy, stop, on_decision=seen.append, start_window=0.2, poll=0.05)
    )
    await asyncio.sleep(1.0)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert [d.action for d in seen] == ["watch"] and "before auto-restart" in seen[0].message
    assert len(list(runs.glob("2*"))) == 1


async def test_confirmed_run_id_protects_a_newer_run(t: LocalTransport, runs: Path) -> None:
    # The user confirmed "kill/restart run A"; meanwhile run B became the latest.
    h = host(runs, "exec sleep 30")
    a = await launch(t, h, **FAST)
    assert a.ok and (await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)).ok
    b = await launch(t, h, **FAST)
    assert b.ok and b.run_id != a.run_id
    res = await restart(t, h, grace=1, start_window=0.2, poll=0.05, run_id=a.run_id)
    assert not res.ok and "nothing done" in res.message
    k = await kill(t, h, grace=1, poll=0.05, check_gpu=False, run_id=a.run_id)
    assert k.run_id == a.run_id and k.signals == ()
    rep = await fetch_run(t, h.run_root)
    assert rep.record is not None and rep.record.id == b.run_id and rep.members  # B untouched
    assert (await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)).ok


async def test_kill_without_a_named_run_refuses_and_signals_nothing(
    t: LocalTransport, runs: Path
) -> None:
    # A caller that names no run gets a refusal, never "the latest run", which may be another
    # run by the time the signal goes.
    h = host(runs, "exec sleep 30")
    a = await launch(t, h, **FAST)
    assert a.ok and a.pgid is not None
    for none in (None, ""):
        with pytest.raises(ControlError, match="no run named"):
            await kill(t, h, run_id=none, grace=1, poll=0.05, check_gpu=False)
    assert group(a.pgid)  # the run is untouched
    rep = await fetch_run(t, h.run_root)
    assert rep.record is not None and rep.record.kill_requested_at is None
    assert (await kill(t, h, run_id=a.run_id, grace=1, poll=0.05, check_gpu=False)).ok


async def test_restart_that_saw_no_run_launches_nothing_beside_one(
    t: LocalTransport, runs: Path
) -> None:
    # None names "no run at all": once the root has a run, nothing is killed or launched.
    h = host(runs, "exec sleep 30")
    a = await launch(t, h, **FAST)
    assert a.ok and a.pgid is not None
    res = await restart(t, h, grace=1, run_id=None, **FAST)
    assert not res.ok and "nothing done" in res.message and group(a.pgid)
    assert len(list(runs.glob("2*"))) == 1
    assert (await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)).ok


async def test_a_child_that_left_the_group_is_killed_too(t: LocalTransport, runs: Path) -> None:
    # The job starts a child in a new session (as some worker pools do): not in the group.
    pidfile = runs.parent / "stray.pid"
    job = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & exec sleep 300"
    h = host(runs, job)
    assert (await launch(t, h, **FAST)).ok
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.05)
    stray = int(pidfile.read_text())
    rep = await fetch_run(t, h.run_root)
    assert rep.record is not None and os.getpgid(stray) != rep.record.pgid
    assert stray in {p.pid for p in rep.members}
    res = await kill_latest(t, h, grace=2, poll=0.05, check_gpu=False)
    assert res.ok and stray in res.pids
    for _ in range(60):
        if not Path(f"/proc/{stray}").exists() or _zombie(stray):
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{stray}").exists() or _zombie(stray)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
