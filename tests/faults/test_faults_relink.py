"""``launch --host`` with the link cut half-way.

The loopback sshd is stopped 0.5-1.7 s after ``dflash-tui launch --host`` starts (while it
connects, runs control.sh, or waits out the start window) and started again 1.5 s later. The
job, once started, survives (it is in its own session). Whatever the moment of the cut, the
command must report the truth: exit 0 with the job's PID when a job runs, exit 1 when none
does; never "connection lost" while the job it started runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sshd_fixtures import ALIAS, local_view, make_sshd

pytestmark = pytest.mark.ssh
ROOT = Path(__file__).resolve().parents[2]
CUTS = (0.5, 0.9, 1.3, 1.7)


def live_jobs(root: Path) -> list[tuple[int, int]]:
    """(pid, pgid) of every run under ``root`` whose recorded leader is alive."""
    out = []
    for pid_file in root.glob("*/pid"):
        try:
            pid, pgid, ticks = (int(x) for x in pid_file.read_text().split())
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[19]) == ticks and fields[0] != "Z":
            out.append((pid, pgid))
    return out


def launch_with_a_cut(server, root: Path, cut: float) -> tuple[int, dict, str]:  # type: ignore[no-untyped-def,type-arg]
    cmd = [sys.executable, "-m", "dflash_tui.cli.main", "launch", "--json", "--host", ALIAS,
           "--run-root", str(root), "--command", "sleep 60", "--start-window", "2"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    time.sleep(cut)
    server.stop()
    time.sleep(1.5)
    server.start()
    out, err = proc.communicate(timeout=120)
    return proc.returncode, json.loads(out), err


def test_launch_reports_the_true_state_after_a_cut_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_sshd(tmp_path / "sshd")  # its own server: this test stops it
    server.start()
    local_view(server, monkeypatch)
    outcomes, wrong = [], []
    try:
        for i, cut in enumerate(CUTS):
            root = tmp_path / f"runs-{i}"
            rc, res, err = launch_with_a_cut(server, root, cut)
            jobs = live_jobs(root)
            outcomes.append((cut, rc, res.get("state"), len(jobs)))
            truthful = (rc == 0 and res["ok"] and [(res["pid"], res["pgid"])] == jobs) or (
                rc == 1 and not res["ok"] and not jobs
            )
            if not truthful:
                wrong.append((cut, rc, res.get("message"), jobs, err[-300:]))
            for _, pgid in jobs:
                os.killpg(pgid, signal.SIGKILL)
    finally:
        server.stop()
    assert wrong == [], outcomes
    assert any(rc == 0 for _, rc, _, _ in outcomes)  # some cut fell after the job started
