"""A job across two hosts (this machine and the loopback sshd, each with its own run root):
``launch --host JOB`` starts both members with the rendezvous environment, ``kill`` stops
both, and ``supervise`` stops the other member when one member's run dies and, with
auto-restart, relaunches the whole job once with ``--resume auto``; no orphan, no doubled run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest
from loopback_sshd import ALIAS, LoopbackSshd
from supervise_util import alive, cleanup, cli, record, run_dirs, wait_for

pytestmark = [pytest.mark.ssh, pytest.mark.slow]
# Short and torch-free: says what it was given, then one step line every 0.2 s.
JOB = (
    "sh -c 'echo rank=$NODE_RANK of=$NNODES at=$MASTER_ADDR:$MASTER_PORT job=$DFLASH_JOB "
    "arg={node_rank} args=[$*]; i=0; while :; do i=$((i+1)); echo step=$i; sleep 0.2; done' x"
)


def job_config(path: Path, roots: tuple[Path, Path], restart: str = "", command: str = JOB) -> Path:
    members = "".join(
        f'[[hosts]]\nlabel = "{label}"\njob = "pair"\n{addr}'
        f"[hosts.run]\ncommand = {json.dumps(command)}\nrun_root = {json.dumps(str(root))}\n\n"
        for label, addr, root in (("a", "", roots[0]), ("b", f'address = "{ALIAS}"\n', roots[1]))
    )
    path.write_text(f"{members}[jobs.pair]\nmaster_port = 29555\n\n[restart]\n{restart}\n")
    return path


def marked(roots: tuple[Path, ...]) -> list[int]:
    """Live processes carrying a run marker of one of ``roots`` (orphans, after a kill)."""
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            data = env.read_bytes()
            state = (env.parent / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z" and any(f"DFLASH_RUN_DIR={r}/".encode() in data for r in roots):
            out.append(int(env.parent.name))
    return out


def pids(run: Path) -> tuple[int, int]:
    pid, pgid, _ = (int(x) for x in (run / "pid").read_text().split())
    return pid, pgid


def test_a_job_launches_on_both_hosts_and_a_kill_stops_both(
    tmp_path: Path, ssh_env: LoopbackSshd
) -> None:
    roots = (tmp_path / "runs-a", tmp_path / "runs-b")
    cfg = job_config(tmp_path / "cfg.toml", roots)
    try:
        res = cli("launch", "--json", "--config", str(cfg), "--host", "pair", "--start-window", "1")
        out = json.loads(res.stdout)
        assert res.returncode == 0 and out["ok"], (res.stdout, res.stderr)
        assert set(out["members"]) == {"a", "b"} and out["job"] == "pair"
        for rank, root in enumerate(roots):
            (run,) = run_dirs(root)
            assert (run / "job").read_text() == f"pair {rank} 2\n"
            wait_for(lambda run=run: "step=2" in (run / "output.log").read_text(), 20, "steps")
            first = (run / "output.log").read_text().splitlines()[0]
            host = socket.gethostname()
            assert first == f"rank={rank} of=2 at={host}:29555 job=pair arg={rank} args=[]"
        st = cli("status", "--json", "--config", str(cfg), "--host", "pair")
        docs = json.loads(st.stdout)
        # (status judges with the default start window: a young run is still `starting`)
        state = docs[0]["run"]["state"]
        assert state in ("starting", "running"), docs[0]["run"]
        assert [(d["host"], d["job"]["node_rank"], d["job"]["state"]) for d in docs] == [
            ("a", 0, state),
            ("b", 1, state),
        ], st.stderr
        table = cli("status", "--config", str(cfg), "--host", "pair").stdout
        assert re.match(r"job pair (STARTING|RUNNING) \(2 nodes\): a (starting|running) ", table)
        # restart: both old runs stopped (and released) before both new ones start
        res = cli("restart", "--json", "--config", str(cfg), "--host", "pair", "--grace", "3",
                  "--start-window", "1")  # fmt: skip
        out = json.loads(res.stdout)
        assert res.returncode == 0 and out["ok"], (res.stdout, res.stderr)
        ended, started = [], []
        for root in roots:
            old, new = run_dirs(root)
            assert (old / "kill_requested").exists() and not alive(pids(old)[1])
            ended.append(float((old / "exit").read_text().split()[1]))
            started.append(float((new / "started_at").read_text()))
        assert min(started) > max(ended)
        res = cli("kill", "--json", "--config", str(cfg), "--host", "pair", "--grace", "3")
        out = json.loads(res.stdout)
        assert res.returncode == 0 and out["ok"], (res.stdout, res.stderr)
        assert all(m["ok"] and m["signals"] for m in out["members"].values()), out
        assert marked(roots) == []  # nothing of either member is left
        table = cli("status", "--config", str(cfg), "--host", "pair").stdout
        assert table.startswith("job pair KILLED (2 nodes): a killed"), table
    finally:
        cleanup(roots[0])
        cleanup(roots[1])


def test_supervise_stops_the_other_member_and_relaunches_the_job_once(
    tmp_path: Path, ssh_env: LoopbackSshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = (tmp_path / "runs-a", tmp_path / "runs-b")
    cfg = job_config(tmp_path / "cfg.toml", roots, "auto = true\nretries = 3\nbackoff_s = 0.5")
    log = tmp_path / "supervisor.log"
    monkeypatch.setenv("DFLASH_SUPERVISE_LOG", str(log))
    opts = ("--config", str(cfg), "--host", "pair", "--start-window", "1")
    try:
        res = cli("launch", "--json", *opts)
        assert res.returncode == 0, (res.stdout, res.stderr)
        first = [run_dirs(r)[0] for r in roots]
        res = cli("supervise", *opts, "--interval", "0.5", "--detach")
        assert res.returncode == 0, res.stderr
        assert all(record(r).get("job", {}).get("name") == "pair" for r in roots)
        sup = (record(roots[0])["pid"], record(roots[0])["start_ticks"])
        _, pgid_a = pids(first[0])
        _, pgid_b = pids(first[1])
        os.killpg(pgid_b, signal.SIGKILL)  # member b dies: a would hang in its collectives
        t0 = time.monotonic()
        wait_for(lambda: not alive(pgid_a), 30, "member a stopped by the supervisor")
        print(f"member a stopped {time.monotonic() - t0:.1f} s after member b was killed")
        wait_for(lambda: all(len(run_dirs(r)) == 2 for r in roots), 40, "the job relaunched")
        second = [run_dirs(r)[1] for r in roots]
        for run in second:
            wait_for(lambda run=run: "step=2" in (run / "output.log").read_text(), 20, "steps")
            assert "args=[--resume auto]" in (run / "output.log").read_text()
            assert alive(pids(run)[0])
        assert "stopping a" in log.read_text()
        wait_for(lambda: record(roots[1]).get("restarts") == 1, 10, "the restart counted")
        # Three more cycles: still one relaunch, two runs per host, the job whole.
        beat = record(roots[0])["heartbeat_at"]
        wait_for(lambda: record(roots[0])["heartbeat_at"] > beat + 1.5, 20, "three beats")
        assert [len(run_dirs(r)) for r in roots] == [2, 2]
        assert record(roots[0])["restarts"] == 1
        stop = cli("supervise", "--stop", *opts)
        assert stop.returncode == 0 and f"PID {sup[0]}" in stop.stdout, stop.stderr
        assert not alive(*sup)
        res = cli("kill", "--config", str(cfg), "--host", "pair", "--grace", "3")
        assert res.returncode == 0, res.stdout + res.stderr
        assert marked(roots) == []
    finally:
        cleanup(roots[0])
        cleanup(roots[1])


def test_a_member_that_cannot_start_leaves_no_half_job(
    tmp_path: Path, ssh_env: LoopbackSshd
) -> None:
    roots = (tmp_path / "runs-a", tmp_path / "runs-b")
    roots[1].parent.mkdir(parents=True, exist_ok=True)
    roots[1].write_text("a file, not a directory: no run root can be made here")
    cfg = job_config(tmp_path / "cfg.toml", roots)
    try:
        res = cli("launch", "--json", "--config", str(cfg), "--host", "pair", "--grace", "3")
        out = json.loads(res.stdout)
        assert res.returncode == 1 and not out["ok"], out
        assert out["members"]["a"]["ok"] and not out["members"]["b"]["ok"], out
        assert "stopped again on a" in out["message"]
        (run,) = run_dirs(roots[0])
        assert (run / "kill_requested").exists()  # member a was started, then stopped
        assert marked(roots[:1]) == []
    finally:
        cleanup(roots[0])


def test_a_member_that_finishes_ends_the_job_without_a_relaunch(
    tmp_path: Path, ssh_env: LoopbackSshd
) -> None:
    roots = (tmp_path / "runs-a", tmp_path / "runs-b")
    # Node 1 finishes (exit 0) at once; node 0 would run on, waiting for it.
    done = "sh -c 'if [ {node_rank} = 1 ]; then exit 0; fi; while :; do sleep 0.2; done'"
    cfg = job_config(tmp_path / "cfg.toml", roots, "auto = true\nbackoff_s = 0.1", done)
    opts = ("--config", str(cfg), "--host", "pair", "--start-window", "1")
    try:
        assert cli("launch", *opts).returncode == 0
        wait_for(lambda: (run_dirs(roots[1])[0] / "exit").exists(), 20, "node 1 finished")
        res = cli("supervise", "--once", "--auto-restart", *opts)
        assert res.returncode == 0 and res.stdout.startswith("stopped: b run "), res
        (run_a,) = run_dirs(roots[0])
        assert (run_a / "kill_requested").exists() and not alive(pids(run_a)[1])
        assert [len(run_dirs(r)) for r in roots] == [1, 1]  # finished: nothing relaunched
        assert marked(roots) == []
    finally:
        cleanup(roots[0])
        cleanup(roots[1])
