"""A supervisor whose run root lock is taken over stops acting, whichever kind it is: the job
supervisor (two members on this machine, each with its own run root) as the host supervisor.

The takeover is the one another supervisor makes (``supervisor.sh take`` with the lock's
token, as a supervisor that judged the holder gone runs it); then a member's run is killed.
A supervisor that still acted would stop the other member and relaunch the job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from supervise_util import alive, cleanup, cli, record, run_dirs, wait_for

from dflash_tui.core.control.supervisor_files import SCRIPT

pytestmark = pytest.mark.slow
LOOP = "sh -c 'i=0; while :; do i=$((i+1)); echo step=$i; sleep 0.2; done'"


def job_config(path: Path, roots: tuple[Path, Path]) -> Path:
    members = "".join(
        f'[[hosts]]\nlabel = "{label}"\njob = "pair"\n'
        f"[hosts.run]\ncommand = {json.dumps(LOOP)}\nrun_root = {json.dumps(str(root))}\n\n"
        for label, root in (("a", roots[0]), ("b", roots[1]))
    )
    restart = "auto = true\nretries = 3\nbackoff_s = 0.2\n"
    path.write_text(f"{members}[jobs.pair]\nmaster_port = 29556\n\n[restart]\n{restart}")
    return path


def take_over(root: Path) -> None:
    """What a second supervisor does to a lock it judged stale: break it and make it its own."""
    old = (root / ".supervisor.lock" / "token").read_text().strip()
    owner = json.dumps({"pid": os.getpid(), "host": "elsewhere", "started_at": time.time()})
    out = subprocess.run(
        ["sh", str(SCRIPT), "take", str(root), old, "f" * 32, owner],
        capture_output=True, text=True, timeout=20, check=True,
    ).stdout  # fmt: skip
    assert "status locked" in out, out


def pgid_of(run: Path) -> int:
    return int((run / "pid").read_text().split()[1])


def test_a_job_supervisor_whose_lock_is_taken_over_stops_acting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = (tmp_path / "runs-a", tmp_path / "runs-b")
    cfg = job_config(tmp_path / "cfg.toml", roots)
    log = tmp_path / "supervisor.log"
    monkeypatch.setenv("DFLASH_SUPERVISE_LOG", str(log))
    opts = ("--config", str(cfg), "--host", "pair", "--start-window", "1")
    try:
        assert cli("launch", *opts).returncode == 0
        res = cli("supervise", *opts, "--interval", "0.5", "--detach")
        assert res.returncode == 0, res.stderr
        sup = (record(roots[0])["pid"], record(roots[0])["start_ticks"])
        (run_a,), (run_b,) = run_dirs(roots[0]), run_dirs(roots[1])
        take_over(roots[1])
        os.killpg(pgid_of(run_a), signal.SIGKILL)  # a member dies: the job is broken
        wait_for(lambda: not alive(*sup), 15, "the job supervisor stops")
        time.sleep(1.0)
        # Nothing acted on: member b runs on, and no member was relaunched.
        assert alive(pgid_of(run_b)), log.read_text()
        assert [len(run_dirs(r)) for r in roots] == [1, 1], log.read_text()
        text = log.read_text()
        assert "was taken over by PID" in text and "this job supervisor stops" in text
        assert "job supervisor PID" in text and "(lock taken over)" in text
        assert "stopping" not in text and "relaunched" not in text
    finally:
        cleanup(roots[0])
        cleanup(roots[1])


def test_a_host_supervisor_whose_lock_is_taken_over_stops_acting(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[restart]\nauto = true\nretries = 3\nbackoff_s = 0.2\n")
    opts = ("--config", str(cfg), "--run-root", str(root), "--start-window", "1")
    try:
        assert cli("launch", *opts, "--command", LOOP).returncode == 0
        res = cli("supervise", *opts, "--command", LOOP, "--interval", "0.5", "--detach")
        assert res.returncode == 0, res.stderr
        sup = (record(root)["pid"], record(root)["start_ticks"])
        (run,) = run_dirs(root)
        take_over(root)
        os.killpg(pgid_of(run), signal.SIGKILL)
        wait_for(lambda: not alive(*sup), 15, "the supervisor stops")
        time.sleep(1.0)
        text = (root / "supervisor.log").read_text()
        assert len(run_dirs(root)) == 1, text  # no restart by the supervisor that lost the lock
        assert "this supervisor stops" in text and "(lock taken over)" in text
    finally:
        cleanup(root)
