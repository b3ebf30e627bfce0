"""Launch and kill races and a run root that lies, with real
processes and process groups.

- a run directory named `...-ffff` (ids must keep sorting in launch order) and foreign entries;
- a live run's directory deleted by hand (its job must still block a second one);
- a kill while the launcher is paused between starting the wrapper and its pid file (a real
  SIGSTOP: a `setsid` on PATH that stops itself, then execs the real one);
- a child that drops the marker and calls `setsid`, with the run's own cgroup and without;
- a launcher SIGKILLed before the pid file (an abandoned directory must not read `starting`);
- a runtime that eats control.sh's answer and exits 3 (must not read as "alive" or "no run").
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from control_faults import (
    alive,
    jobs,
    kill_marked,
    marked,
    pids_in,
    proc_state,
    record,
    wait_for,
)

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.control.script import ControlError, _script, fetch_run
from dflash_tui.core.link import container as containers
from dflash_tui.core.link.transport import LocalTransport

FAST = {"start_window": 0.3, "poll": 0.05}


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "runs"
    yield root
    kill_marked(root, pids_in(tmp_path / "pids"))


def host(runs: Path, command: str, workdir: Path) -> HostConfig:
    return HostConfig(command=command, run_root=str(runs), workdir=str(workdir))


async def three_launches(t: LocalTransport, h: HostConfig) -> tuple[int, int]:
    """Three launches of a long job: (jobs alive after, jobs the root's latest run shows)."""
    for _ in range(3):
        await launch(t, h, **FAST)
    groups = jobs(Path(h.run_root))
    rep = await fetch_run(t, h.run_root)
    shown = {p.pgid for p in rep.members}
    return len(groups), len(groups - shown)


async def test_a_run_named_ffff_never_makes_new_ids_sort_below_it(
    runs: Path, tmp_path: Path
) -> None:
    t = LocalTransport()
    runs.mkdir(parents=True)
    # The last counter of a later second (a clock that went back, or a copied directory).
    (runs / "20991231-235959-ffff").mkdir()
    (runs / "notes").mkdir()  # a foreign directory: ignored
    (runs / "README").write_text("not a run\n")
    jobs, hidden = await three_launches(t, host(runs, "exec sleep 60", tmp_path))
    names = sorted(p.name for p in runs.glob("2*"))
    record("ids: a run directory named ...-ffff", doubled=max(jobs - 1, 0), untracked=hidden)
    assert jobs == 1 and hidden == 0, (jobs, hidden, names)
    first = await launch(t, host(runs, "exec sleep 60", tmp_path), **FAST)  # refused: alive
    assert first.refused, first
    latest = (await fetch_run(t, str(runs))).record
    assert latest is not None and latest.pid is not None and latest.id == names[-1]


async def test_ids_sort_in_launch_order_past_ffff_of_a_later_second(
    runs: Path, tmp_path: Path
) -> None:
    t = LocalTransport()
    runs.mkdir(parents=True)
    (runs / "20991231-235959-ffff").mkdir()  # a later clock's run, at its last counter
    ids = []
    for _ in range(3):
        res = await launch(t, host(runs, "true", tmp_path), **FAST)
        assert res.ok, res
        ids.append(res.run_id or "")
    assert ids == sorted(ids) and ids[0] > "20991231-235959-ffff", ids
    assert ids[0].startswith("20991231-235960-"), ids  # the time part counts on


async def test_a_note_names_the_foreign_entries(runs: Path, tmp_path: Path) -> None:
    t = LocalTransport()
    runs.mkdir(parents=True)
    (runs / "notes").mkdir()
    # Our own files beside the runs are no foreign entries: the supervisor's, the recorder's.
    for name in ("supervisor.json", "supervisor.log", "supervisor.policy.json"):
        (runs / name).write_text("{}\n")
    (runs / ".record").mkdir()
    from dflash_tui.core.control.launch import launch_script

    rep = await launch_script(t, host(runs, "true", tmp_path), 0, 2.0)
    assert any("notes" in n and "not a run directory" in n for n in rep.notes), rep.notes
    assert [n for n in rep.notes if "not a run directory" in n] == [
        "ignoring notes in the run root: not a run directory"
    ], rep.notes
    res = await launch(t, host(runs, "true", tmp_path), **FAST)
    assert res.ok and "ignoring notes in the run root" in res.message, res


async def test_deleting_a_live_runs_directory_does_not_let_a_second_job_start(
    runs: Path, tmp_path: Path
) -> None:
    t = LocalTransport()
    h = host(runs, "exec sleep 60", tmp_path)
    first = await launch(t, h, **FAST)
    assert first.ok and first.pid, first
    subprocess.run(["rm", "-rf", first.dir or ""], check=True)
    second = await launch(t, h, **FAST)
    groups = jobs(runs)
    record("a live run's directory deleted by hand", doubled=max(len(groups) - 1, 0),
           false=int(second.ok))  # fmt: skip
    assert not second.ok and len(groups) == 1, (second, groups)
    assert first.run_id in (second.error or "") and str(first.pid) in (second.error or "")


SHIM = """#!/bin/sh
# A setsid that stops itself first: the launcher then waits for a pid file that cannot come.
echo $$ >"$SHIM_PIDFILE"
kill -STOP $$
exec {real} "$@"
"""


@pytest.fixture
def paused_setsid(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    real = subprocess.run(["sh", "-c", "command -v setsid"], capture_output=True, text=True)
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    (shim_dir / "setsid").write_text(SHIM.format(real=real.stdout.strip()))
    (shim_dir / "setsid").chmod(0o755)
    pidfile = tmp_path / "shim.pid"
    env = dict(os.environ, PATH=f"{shim_dir}:{os.environ['PATH']}", SHIM_PIDFILE=str(pidfile))
    yield env, pidfile
    for pid in pids_in(pidfile):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def start_launcher(
    runs: Path, command: str, workdir: Path, env: dict[str, str]
) -> subprocess.Popen:
    """control.sh's launch verb, as the supervisor sends it, in a process of its own."""
    args = ["sh", "-s", "--", "launch", str(runs), command, str(workdir), "", "0", "10000"]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    assert p.stdin is not None
    p.stdin.write(_script())
    p.stdin.close()
    return p


async def test_a_kill_while_the_launcher_is_paused_stops_the_job_for_good(
    runs: Path, tmp_path: Path, paused_setsid: tuple[dict[str, str], Path]
) -> None:
    env, pidfile = paused_setsid
    t = LocalTransport()
    job_pids = tmp_path / "pids"
    cmd = f"echo $$ >> {job_pids}; exec sleep 60"
    launcher = start_launcher(runs, cmd, tmp_path, env)
    assert wait_for(lambda: any(proc_state(p) == "T" for p in pids_in(pidfile))), "no pause"
    k = await kill_latest(t, host(runs, cmd, tmp_path), grace=1, poll=0.05, check_gpu=False)
    for pid in pids_in(pidfile):
        os.kill(pid, signal.SIGCONT)
    launcher.wait(timeout=30)
    await asyncio.sleep(1.0)  # the job would be running by now
    started = {p for p in pids_in(job_pids) if alive(p)}
    record("kill while the launcher is paused (SIGSTOP before the wrapper)",
           untracked=len(started), false=int(k.ok and bool(started)))  # fmt: skip
    assert k.ok, k
    assert not started and not marked(runs), (k, started)
    rep = await fetch_run(t, str(runs))
    assert rep.state(0.3) == "launch-failed" and "kill" in (rep.record.launch_error or ""), rep


async def test_a_kill_right_after_the_pid_file_stops_the_job(runs: Path, tmp_path: Path) -> None:
    """The launcher paused after the pid file, still holding the lock (a test-only stop point):
    the kill signals the job it can see and leaves the launcher a kill; nothing survives."""
    t = LocalTransport()
    env = dict(os.environ, DFLASH_CONTROL_PAUSE="started")
    launcher = start_launcher(runs, "exec sleep 60", tmp_path, env)
    assert wait_for(lambda: proc_state(launcher.pid) == "T"), "the launcher did not pause"
    k = await kill_latest(
        t, host(runs, "exec sleep 60", tmp_path), grace=1, poll=0.05, check_gpu=False
    )
    os.kill(launcher.pid, signal.SIGCONT)
    launcher.wait(timeout=30)
    assert k.ok and not marked(runs), k


SETSID_JOBS = {
    # the escapee's parent waits: it can still be found by its parent PID
    "parent waits": "env -u DFLASH_RUN_DIR setsid sh -c 'echo $$ >> {p}; exec sleep 60' & wait",
    # the escapee is orphaned at once: only a cgroup still knows it
    "orphaned": "(env -u DFLASH_RUN_DIR setsid sh -c 'echo $$ >> {p}; exec sleep 60' &); "
    "exec sleep 60",
}


def cgroup_v2() -> bool:
    try:
        return "cgroup2" in Path("/proc/self/mounts").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "no-cgroup"])
@pytest.mark.parametrize("case", list(SETSID_JOBS))
async def test_a_child_that_drops_the_marker_and_calls_setsid(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, cgroup: bool
) -> None:
    if cgroup and not cgroup_v2():
        pytest.skip("no cgroup v2 on this host")
    if not cgroup:
        monkeypatch.setenv("DFLASH_NO_CGROUP", "1")
    t = LocalTransport()
    escapees = tmp_path / "pids"
    h = host(runs, SETSID_JOBS[case].format(p=escapees), tmp_path)
    res = await launch(t, h, **FAST)
    assert res.ok, res
    assert wait_for(lambda: bool(pids_in(escapees))), "the job did not start its escapee"
    k = await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)
    left = {p for p in pids_in(escapees) if alive(p)}
    # A kill that says plainly "stopped" while a process of the job lives is a false report;
    # saying it cannot account for such processes is the truth on a host without cgroups.
    plain = k.ok and "cannot be accounted for" not in k.message
    mode = "cgroup" if cgroup else "no cgroup"
    record(f"setsid escapee, {case}, {mode}", untracked=len(left), false=int(plain and bool(left)))
    if cgroup or case == "parent waits":
        assert k.ok and not left, (k, left)
        assert (res.dir and Path(res.dir, "cgroup").exists()) == cgroup
    else:
        assert left and not plain, k  # cannot be found; and it is said
    for p in pids_in(escapees):
        if alive(p):
            os.kill(p, signal.SIGKILL)


async def test_an_abandoned_run_directory_becomes_launch_failed(
    runs: Path, tmp_path: Path, paused_setsid: tuple[dict[str, str], Path]
) -> None:
    env, pidfile = paused_setsid
    t = LocalTransport()
    launcher = start_launcher(runs, "exec sleep 60", tmp_path, env)
    assert wait_for(lambda: any(proc_state(p) == "T" for p in pids_in(pidfile)))
    launcher.kill()  # SIGKILL: no launch_error will ever be written
    launcher.wait()
    for pid in pids_in(pidfile):
        os.kill(pid, signal.SIGKILL)  # and the wrapper never starts
    await asyncio.sleep(1.5)
    rep = await fetch_run(t, str(runs))
    state = rep.state(0.5)
    record("launcher SIGKILLed before the pid file", false=int(state == "starting"))
    assert state == "launch-failed", rep


async def test_a_runtime_that_exits_3_is_never_read_as_an_answer(
    runs: Path, tmp_path: Path
) -> None:
    t = LocalTransport()
    h = host(runs, "exec sleep 60", tmp_path)
    res = await launch(t, h, **FAST)
    assert res.ok, res
    # A container runtime that eats the command and exits 3 (as control.sh's "alive" did).
    eater = containers.parse("sh -c 'cat >/dev/null; exit 3' eater {cmd}")
    assert eater is not None
    bad = LocalTransport(wrap=eater.wrap)
    outcome = "raised"
    try:
        k = await kill_latest(bad, h, grace=1, poll=0.05, check_gpu=False)
        outcome = f"kill said ok={k.ok}: {k.message}"
    except ControlError as exc:
        assert "no answer" in str(exc) and "exit 3" in str(exc), exc  # it printed nothing
    again = await launch(bad, h, **FAST)
    false = int(outcome != "raised") + int(again.ok or again.refused)
    record("a runtime that exits 3 without an answer", false=false)
    assert outcome == "raised", outcome
    assert not again.ok and "no answer" in (again.error or ""), again
    assert alive(res.pid or 0)
