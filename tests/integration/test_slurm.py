"""Runs under a real Slurm (tests/slurm_cluster.py: munged, slurmctld, two slurmds on this host).

``dflash-tui launch|status|kill|restart --scheduler slurm`` submit, read, cancel and requeue
real jobs; nothing of Slurm is mocked. The cluster has no slurmdbd, so an ended job is read
from ``scontrol show job`` (and the exit record once Slurm forgot it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable
from schemas import check_status
from slurm_cluster import Cluster
from supervise_util import alive, cli, record, run_dirs, wait_for
from support import processes_naming

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.slurm import actions, supervise
from dflash_tui.core.control.slurm.findings import SLURM_REFRESH_S
from dflash_tui.core.link.transport import LocalTransport

pytestmark = pytest.mark.slow
CRED_EXPIRE_S = 5  # tests/slurm_cluster.py's AuthInfo cred_expire
SLURM_TOOLS = ("squeue", "sbatch", "sacct", "scontrol", "scancel", "sinfo", "srun", "salloc")


def flags(root: Path) -> tuple[str, ...]:
    return ("--scheduler", "slurm", "--run-root", str(root))


def status(root: Path, *extra: str) -> dict[str, Any]:
    res = cli("status", "--json", *flags(root), *extra)
    doc = json.loads(res.stdout)
    check_status(doc)  # the published schema holds under Slurm too (queued, scheduler, nodes)
    return doc


def scheduler(root: Path, *extra: str) -> dict[str, Any]:
    return status(root, *extra)["scheduler"] or {}


def launch(root: Path, command: str, *extra: str) -> str:
    """``launch``; the job id it printed."""
    res = cli("launch", *flags(root), "--command", command, *extra)
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"submitted: job (\d+) ", res.stdout)
    assert m, res.stdout
    return m.group(1)


def marked(d: Path) -> list[str]:
    """Live processes that carry the run's marker (DFLASH_RUN_DIR), on this host."""
    return processes_naming(f"DFLASH_RUN_DIR={d}\0", "environ")


def test_the_cluster_starts_within_30_s(slurm: Cluster) -> None:
    assert slurm.started_in is not None and slurm.started_in <= 30
    assert slurm.node_states() == {"n1": "idle", "n2": "idle"}


def test_drained_nodes_hold_the_job_pending_then_it_runs_and_a_kill_cancels_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    # The admins' reason is Slurm's text: an escape in it never reaches the terminal raw.
    cluster.run("scontrol", "update", "nodename=n1,n2", "state=drain", "reason=fan\x1b]0;x\x07")
    job = launch(root, "echo started; sleep 300")
    doc = status(root)
    assert doc["run"]["state"] == "queued"
    sched = doc["scheduler"]
    assert (sched["kind"], sched["job_id"], sched["state"]) == ("slurm", job, "PENDING")
    assert sched["reason"] and sched["nodes"] == []
    codes = [f["code"] for f in doc["findings"]]
    assert "queued" in codes and codes.count("node-drained") == 2, doc["findings"]
    queued = next(f for f in doc["findings"] if f["code"] == "queued")
    assert sched["reason"] in queued["message"]
    drained = next(f for f in doc["findings"] if f["code"] == "node-drained")
    assert "is drained (fan" in drained["message"] and "\x1b" not in drained["message"]
    # A second launch is refused while the job waits.
    metrics = cli("status", "--openmetrics", *flags(root)).stdout
    assert 'dflash_run_state{host="local",state="queued"} 1.0' in metrics, metrics[:2000]
    table = cli("status", *flags(root)).stdout
    assert f"Slurm job {job} PENDING (" in table and "info: job " in table, table
    assert "drained (fan" in table and "\x1b" not in table and "\x07" not in table
    # The table's run line says Slurm's word too, not the login node's reading of the run
    # directory (no process there: "starting", later "exited").
    assert "run: queued" in table, table
    again = cli("launch", *flags(root), "--command", "true")
    assert again.returncode == 1 and f"job {job} PENDING" in again.stdout, again.stdout

    # status --watch says the same, and that it runs once the nodes are back.
    watch = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--watch", *flags(root),
         "--interval", "1"], stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        time.sleep(3)
        cluster.run("scontrol", "update", "nodename=n1,n2", "state=resume")
        wait_for(lambda: scheduler(root).get("state") == "RUNNING", 30, "the job runs")
        time.sleep(SLURM_REFRESH_S + 2)  # --watch reads Slurm again within SLURM_REFRESH_S
    finally:
        os.killpg(watch.pid, signal.SIGINT)
        said = watch.communicate(timeout=30)[0]
    assert f"finding INFO queued: job {job} is queued" in said, said
    assert "run queued" in said and "run running" in said and "finding gone queued" in said
    d = run_dirs(root)[-1]
    wait_for(lambda: (d / "pid").exists(), 10, "the wrapper's pid file")
    pid, _, ticks = (int(x) for x in (d / "pid").read_text().split())
    assert alive(pid, ticks) and marked(d)
    doc = status(root)
    # Both nodes came back at once: Slurm starts the job on whichever it takes first.
    assert doc["run"]["state"] == "running"
    (ran_on,) = doc["scheduler"]["nodes"]
    assert ran_on in ("n1", "n2")
    assert 0 < doc["scheduler"]["time_left_s"] <= 30 * 60
    # The node, sampled by the probe in a step inside the job (srun --overlap): it sees the
    # job's processes (the probe's own step is a process tree of that node).
    (node,) = doc["nodes"]
    assert node["host"] == ran_on and "error" not in node, node
    assert node["run"]["id"] == d.name and node["run"]["state"] in ("starting", "running")

    res = cli("kill", *flags(root), "--grace", "5")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"job {job} CANCELLED on {ran_on}" in res.stdout
    assert scheduler(root)["state"] == "CANCELLED"
    assert status(root)["run"]["state"] == "killed"
    assert not alive(pid, ticks) and marked(d) == []
    assert "started" in (d / "output.log").read_text()


def test_the_metrics_exporter_says_queued(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    cluster.run("scontrol", "update", "nodename=n1,n2", "state=drain", "reason=test")
    launch(root, "sleep 300")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "metrics", *flags(root),
         "--interval", "0.5", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = re.search(r"http://127\.0\.0\.1:\d+/metrics", proc.stdout.readline())
        assert url

        def queued() -> bool:
            with urllib.request.urlopen(url.group(), timeout=10) as resp:
                text = resp.read().decode()
            return 'dflash_run_state{host="local",state="queued"} 1.0' in text

        wait_for(queued, 20, "the exporter says queued")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_restart_requeues_the_same_job(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    job = launch(root, "echo run; sleep 300; :")  # `:` takes the --resume auto of a restart
    wait_for(lambda: scheduler(root).get("state") == "RUNNING", 30, "the job runs")
    res = cli("restart", "--json", *flags(root))
    out = json.loads(res.stdout)
    assert out["ok"] and out["action"] == "requeue" and out["job_id"] == job, out
    # Requeued, it is held back by nothing: it runs again, same id, with --resume auto.
    log = run_dirs(root)[-1] / "output.log"
    wait_for(lambda: log.read_text().count("run\n") == 2, 30, "the job runs again")
    assert scheduler(root)["state"] == "RUNNING"
    assert (run_dirs(root)[-1] / "command").read_text().endswith("--resume auto")
    assert len(list(root.iterdir())) == 1
    # A kill that names another job (a confirmation shown for an earlier one) is refused.
    host = HostConfig(run_root=str(root), scheduler="slurm")
    res = asyncio.run(actions.cancel_run(LocalTransport(), host, grace=1, job_id=str(int(job) + 1)))
    assert res.refused and not res.ok and f"job {job} is" in res.message
    assert scheduler(root)["state"] == "RUNNING"
    # A restart that names another run (a confirmation shown before this one) is refused too.
    res = asyncio.run(actions.requeue_or_resubmit(LocalTransport(), host, run_id="not-this-run"))
    assert res.refused and not res.ok and "no longer the latest" in res.message
    assert scheduler(root)["state"] == "RUNNING" and scheduler(root)["job_id"] == job


def test_over_ssh_the_login_node_submits_reads_and_cancels(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = sshd_unavailable()
    if why is not None:
        pytest.skip(why)
    # The login node (a loopback sshd) knows the cluster; this side does not.
    server = LoopbackSshd(tmp_path / "sshd", session_env={"SLURM_CONF": str(cluster.conf)})
    server.start()
    monkeypatch.setenv("DFLASH_TUI_SSH_CONFIG", str(server.ssh_config))
    monkeypatch.delenv("SLURM_CONF")
    root = tmp_path / "runs"
    try:
        job = launch(root, "sleep 300; :", "--host", ALIAS)
        wait_for(lambda: scheduler(root, "--host", ALIAS).get("state") == "RUNNING", 30, "runs")
        doc = status(root, "--host", ALIAS)
        assert doc["host"] == ALIAS and doc["scheduler"]["job_id"] == job
        assert [n["host"] for n in doc["nodes"]] == ["n1"] and "error" not in doc["nodes"][0]
        res = cli("kill", *flags(root), "--host", ALIAS, "--grace", "5")
        assert res.returncode == 0 and f"job {job} CANCELLED on n1" in res.stdout, res.stdout
    finally:
        server.stop()


def test_of_two_launches_at_once_one_submits(cluster: Cluster, tmp_path: Path) -> None:
    host = HostConfig(run_root=str(tmp_path / "runs"), scheduler="slurm", command="sleep 300")

    async def both() -> list[actions.SlurmResult]:
        return list(
            await asyncio.gather(*(actions.submit_run(LocalTransport(), host) for _ in "ab"))
        )

    results = asyncio.run(both())
    assert sorted(r.ok for r in results) == [False, True], [r.message for r in results]
    refused = next(r for r in results if not r.ok)
    assert refused.refused and "nothing was submitted" in refused.message
    assert cluster.run("squeue", "-h", "-o", "%i").stdout.split() == [
        next(r.job_id for r in results if r.ok)
    ]
    assert not (tmp_path / "runs" / ".slurm-launch").exists()  # given back


def test_restart_of_a_job_slurm_forgot_submits_it_again_resumed(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    old = root / "20260101-000000-0001"
    old.mkdir(parents=True)
    (old / "slurm_job").write_text("999999\n")  # long gone: no Slurm command knows it
    (old / "slurm_command").write_text("echo again; sleep 300; :")
    (old / "exit").write_text("1 1767225600.0\n")
    assert scheduler(root)["state"] == "FAILED"  # from the exit record
    res = cli("restart", "--json", *flags(root), "--command", "echo again; sleep 300; :")
    out = json.loads(res.stdout)
    assert out["ok"] and out["action"] == "resubmit" and out["run_id"] != old.name, out
    assert (root / out["run_id"] / "slurm_command").read_text().endswith("; : --resume auto")
    wait_for(lambda: scheduler(root).get("state") == "RUNNING", 30, "the new job runs")
    assert not (old / "command").exists()  # the forgotten run was left as it was


def test_a_forgotten_jobs_exit_record_is_read_by_the_one_reader(
    cluster: Cluster, tmp_path: Path
) -> None:
    """status and the supervisor's reading (job_report) of a job Slurm forgot read its exit
    record through rundir.parse_exit: a good one is the code and end time, a malformed part
    is unknown (no traceback, no restart decided on a guess)."""
    root = tmp_path / "runs"
    run = root / "20260101-000000-0001"
    run.mkdir(parents=True)
    (run / "slurm_job").write_text("999999\n")  # long gone: no Slurm command knows it
    host = HostConfig(run_root=str(root), scheduler="slurm")
    for text, state, code, ended in [
        ("3 1767225600.5\n", "FAILED", 3, 1767225600.5),
        ("3 1e999\n", "FAILED", 3, None),
        ("3abc 1767225600\n", "UNKNOWN", None, 1767225600.0),  # each part on its own
        ("9" * 90 + "\n", "UNKNOWN", None, None),
    ]:
        (run / "exit").write_text(text)
        assert scheduler(root)["state"] == state, text
        report = asyncio.run(supervise.job_report(LocalTransport(), host))
        assert report.record is not None, text
        assert (report.record.exit_code, report.record.ended_at) == (code, ended), text


def test_a_warning_sbatch_prints_is_not_taken_for_the_job_id(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real sbatch, behind one that first says what sbatch says of a deprecated option.
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(["sh", "-c", "command -v sbatch"], capture_output=True, text=True)
    assert real.returncode == 0 and real.stdout.strip(), real.stderr
    sbatch = shlex.quote(real.stdout.strip())
    warn = "echo 'sbatch: warning: --foo is deprecated' >&2"
    (shim / "sbatch").write_text(f'#!/bin/sh\n{warn}\nexec {sbatch} "$@"\n')
    (shim / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    root = tmp_path / "runs"
    job = launch(root, "sleep 30; :")
    assert (run_dirs(root)[-1] / "slurm_job").read_text().strip() == job
    assert scheduler(root).get("job_id") == job
    again = cli("launch", *flags(root), "--command", "true")
    assert again.returncode == 1 and f"job {job}" in again.stdout, again.stdout  # one live job
    cli("kill", *flags(root), "--grace", "1")


def test_a_command_that_exits_3_reads_failed_3(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    job = launch(root, "echo bye; exit 3")
    wait_for(lambda: scheduler(root).get("state") == "FAILED", 30, "the job fails")
    doc = status(root)
    assert doc["scheduler"]["exit_code"] == 3 and doc["scheduler"]["job_id"] == job
    assert (doc["run"]["state"], doc["run"]["exit_code"]) == ("exited", 3)
    assert (run_dirs(root)[-1] / "exit").read_text().split()[0] == "3"
    # wait reads the run under Slurm again through the scheduler: failed, the log's reason.
    res = cli("wait", *flags(root), "--until", "step:1000000", "--timeout", "60")
    assert res.returncode != 0 and "log: bye" in res.stdout, res.stdout + res.stderr


def test_a_job_past_its_time_reads_timeout(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    cfg = tmp_path / "slurm.toml"
    cfg.write_text('[slurm]\ntime = "1"\n')
    launch(root, "sleep 600", "--config", str(cfg))
    # Slurm's minimum limit is a minute; slurmctld looks at limits every 30 s or so.
    wait_for(lambda: scheduler(root).get("state") == "TIMEOUT", 130, "TIMEOUT")
    doc = status(root)
    ended = next(f for f in doc["findings"] if f["code"] == "scheduler-ended-job")
    assert "TIMEOUT" in ended["message"] and "restart" in ended["message"]


def test_status_says_when_slurm_cannot_be_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "runs"
    (root / "20260101-000000-0001").mkdir(parents=True)
    (root / "20260101-000000-0001" / "slurm_job").write_text("7\n")
    # This machine's commands but Slurm's: a login node without slurm-client.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(d).iterdir():
            link = bin_dir / tool.name
            if not link.exists() and not tool.name.startswith(SLURM_TOOLS):
                link.symlink_to(tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    res = cli("status", "--json", *flags(root))
    doc = json.loads(res.stdout)
    found = [f for f in doc["findings"] if f["code"] == "scheduler-unavailable"]
    assert found and "squeue is not on PATH" in found[0]["message"], doc["findings"]
    assert doc["run"]["state"] == "unknown"


def test_status_says_when_slurmctld_does_not_answer(
    slurm: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cluster's config whose slurmctld was never started (its port is free).
    down = Cluster(tmp_path / "down")
    down.write_config()
    monkeypatch.setenv("SLURM_CONF", str(down.conf))
    root = tmp_path / "runs"
    (root / "20260101-000000-0001").mkdir(parents=True)
    (root / "20260101-000000-0001" / "slurm_job").write_text("7\n")
    t0 = time.monotonic()
    res = cli("status", "--json", *flags(root))
    doc = json.loads(res.stdout)
    (found,) = [f for f in doc["findings"] if f["code"] == "scheduler-unavailable"]
    assert "slurmctld does not answer squeue" in found["message"], found
    assert doc["run"]["state"] == "unknown" and res.returncode == 0
    assert time.monotonic() - t0 < 60
    launched = cli("launch", *flags(root), "--command", "true")
    assert launched.returncode == 1 and "slurmctld does not answer" in launched.stderr


def test_the_batch_script_and_sbatch_args_come_from_the_slurm_table(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    cfg = tmp_path / "slurm.toml"
    cfg.write_text(
        '[slurm]\npartition = "debug"\ngpus_per_node = 2\njob_name = "it; rm -rf x"\n'
        'sbatch_args = ["--comment", "a b; $(touch pwned)"]\n'
    )
    res = cli("launch", *flags(root), "--config", str(cfg), "--command", "sleep 300")
    assert res.returncode == 2 and "job_name must be a Slurm name" in res.stderr
    cfg.write_text(cfg.read_text().replace("it; rm -rf x", "dflash-test"))
    job = launch(root, "sleep 300", "--config", str(cfg))
    out = cluster.run("scontrol", "-o", "show", "job", job).stdout
    assert "JobName=dflash-test" in out and "Partition=debug" in out
    assert "gres:gpu:2" in out and "Comment=a b; $(touch pwned)" in out.replace("\\", "")
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_submission_sbatch_refuses_is_a_failed_launch_with_its_words(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[slurm]\npartition = "nope"\n')
    res = cli("launch", *flags(root), "--config", str(cfg), "--command", "true")
    assert res.returncode == 1 and "launch failed: sbatch: " in res.stdout, res.stdout
    assert "invalid partition" in res.stdout.lower()
    doc = status(root)
    assert doc["run"]["state"] == "launch-failed" and doc["scheduler"]["job_id"] is None
    assert "launch-failed" in [f["code"] for f in doc["findings"]]


def test_unknown_slurm_keys_are_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('scheduler = "slurm"\n[slurm]\npartiton = "gpu"\n')
    res = cli("config", "--config", str(cfg))
    assert res.returncode == 2 and "partiton" in res.stderr and "partition" in res.stderr


def test_supervise_requeues_a_killed_job_and_stops_a_crash_loop_at_fatal(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    cfg = tmp_path / "sup.toml"
    cfg.write_text("[restart]\nauto = true\nretries = 2\nbackoff_s = 1\nmax_backoff_s = 1\n")
    job = launch(root, "sleep 300; :")
    wait_for(lambda: scheduler(root).get("state") == "RUNNING", 30, "the job runs")
    sup = cli("supervise", "--detach", "--config", str(cfg), *flags(root),
              "--interval", "1", "--command", "sleep 300; :")  # fmt: skip
    assert sup.returncode == 0, sup.stderr
    try:
        cluster.run("scancel", "--signal=KILL", job)
        t0 = time.monotonic()
        wait_for(lambda: scheduler(root).get("state") not in ("RUNNING", None), 20, "the kill")
        wait_for(lambda: scheduler(root).get("state") == "RUNNING", 20, "the job is back")
        back = time.monotonic() - t0
        # backoff 1 s + one interval of 1 s; then Slurm holds a requeued job for its credential
        # lifetime (cred_expire, 5 s on this cluster: the least Slurm takes) and starts it at
        # its next scheduling pass; a few seconds more for the readings of this test.
        assert back < 1 + 1 + CRED_EXPIRE_S + 4, back
        assert scheduler(root)["job_id"] == job
    finally:
        cli("supervise", "--stop", "--run-root", str(root))
    # A crash loop: every start exits 3; two restarts, then FATAL.
    crash = tmp_path / "crash"
    sup = cli("supervise", "--detach", "--config", str(cfg), *flags(crash),
              "--interval", "1", "--command", "exit 3")  # fmt: skip
    assert sup.returncode == 0, sup.stderr
    try:
        launch(crash, "exit 3")  # after the supervisor began: a crash it saw
        wait_for(lambda: (record(crash).get("last_decision") or {}).get("action") == "fatal",
                 60, "FATAL")  # fmt: skip
        assert "gave up after 2 restarts" in record(crash)["last_decision"]["message"]
        assert run_dirs(crash)[-1].joinpath("output.log").exists()
    finally:
        cli("supervise", "--stop", "--run-root", str(crash))


def test_two_nodes_run_the_tiny_pipeline_as_one_torchrun_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    from dflash_train.events import read_events

    root = tmp_path / "runs"
    cfg = tmp_path / "two.toml"
    cfg.write_text("[slurm]\nnodes = 2\n")
    command = (
        f"{sys.executable} -m dflash_train.train --preset tiny --device cpu --steps 6 "
        "--checksum-every 3 --target-workers 1 --drafter-workers 1 --threads 1 "
        "--eval-batches 0 --gen-samples 24 --dist-timeout 60"
    )
    launch(root, command, "--config", str(cfg))
    wait_for(lambda: scheduler(root).get("state") != "PENDING", 30, "the job starts")
    # While it runs (torch's import alone takes seconds), both nodes are sampled inside it.
    running = status(root)
    assert running["scheduler"]["state"] == "RUNNING", running["scheduler"]
    assert [n["host"] for n in running["nodes"]] == ["n1", "n2"], running.get("nodes")
    assert all("error" not in n for n in running["nodes"]), running["nodes"]
    wait_for(lambda: scheduler(root).get("state") in ("COMPLETED", "FAILED"), 180, "the job ends")
    d = run_dirs(root)[-1]
    log = (d / "output.log").read_text()
    assert scheduler(root)["state"] == "COMPLETED", log[-3000:]
    assert scheduler(root)["nodes"] == ["n1", "n2"]
    assert "srun --nodes=2" in (d / "command").read_text()  # one torchrun agent a node
    assert "-m torch.distributed.run --nnodes" in (d / "command").read_text()
    events = read_events(d / "events.jsonl")
    dist = next(e for e in events if e["event"] == "distributed")
    assert dist["world"] == 2 and dist["backend"] == "gloo"
    assert [e["event"] for e in events].count("started") == 1  # one stream: rank 0's
    sums = {e["step"]: e["ranks"] for e in events if e["event"] == "replica_checksum"}
    assert sorted(sums) == [0, 3, 6]
    for rows in sums.values():
        assert len(rows) == 2 and len({v for r in rows for v in r}) == 1, rows
