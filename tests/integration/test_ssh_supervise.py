"""``dflash-tui supervise --host`` on a bastion (here: this machine, through the loopback
sshd): it keeps supervising through an sshd restart, re-attaches to the same run without
starting a second one, and still restarts a crash over the new connection."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest
from conftest import local_view, make_sshd
from loopback_sshd import ALIAS
from supervise_util import alive, cleanup, cli, config, record, run_dirs, wait_for

pytestmark = [pytest.mark.ssh, pytest.mark.slow]
JOB = "while :; do date +%s.%N; sleep 0.2; done"


def test_supervise_over_ssh_keeps_going_through_an_sshd_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_sshd(tmp_path / "sshd")  # its own server: this test stops it
    server.start()
    root, log = tmp_path / "runs", tmp_path / "supervisor.log"
    try:
        local_view(server, monkeypatch)
        monkeypatch.setenv("DFLASH_SUPERVISE_LOG", str(log))
        cfg = config(tmp_path / "cfg.toml", "retries = 3\nbackoff_s = 0.5")
        opts = ("--host", ALIAS, "--run-root", str(root), "--start-window", "1")
        job = json.loads(cli("launch", "--json", *opts, "--command", JOB).stdout)
        assert job["ok"], job
        res = cli("supervise", "--config", str(cfg), *opts, "--command", JOB, "--interval",
                  "0.5", "--auto-restart", "--detach")  # fmt: skip
        assert res.returncode == 0, res.stderr
        rec = record(root)
        assert rec["host"] == socket.gethostname() and rec["target"] == ALIAS
        sup = (rec["pid"], rec["start_ticks"])
        server.stop()
        wait_for(lambda: f"link to {ALIAS} down" in log.read_text(), 20, "the link seen down")
        down_at = time.time()
        time.sleep(2)
        assert alive(*sup) and alive(job["pid"])  # neither gave up
        assert record(root)["heartbeat_at"] < down_at  # nothing written while down
        server.start()
        wait_for(lambda: record(root)["heartbeat_at"] > time.time() - 1, 40, "beating again")
        # A beat can land in the cycle whose run read still failed (sshd came up in between):
        # the next cycle reads the run and says the link is back.
        wait_for(lambda: f"link to {ALIAS} back" in log.read_text(), 10, "the link seen back")
        assert [d.name for d in run_dirs(root)] == [job["run_id"]]  # re-attached, no 2nd run
        assert alive(job["pid"]) and record(root)["restarts"] == 0 and record(root)["pid"] == sup[0]
        os.killpg(job["pgid"], signal.SIGKILL)  # a crash, over the new connection
        wait_for(lambda: len(run_dirs(root)) == 2, 40, "the crash restarted")
        wait_for(lambda: record(root).get("restarts") == 1, 10, "the restart counted")
        stop = cli("supervise", "--stop", *opts)
        assert stop.returncode == 0 and f"PID {sup[0]}" in stop.stdout, stop.stderr
        assert not alive(*sup) and record(root)["stopped_at"] is not None
    finally:
        cleanup(root)
        server.stop()
