"""The app on a host under a real Slurm (tests/slurm_cluster.py: munged, slurmctld and two
slurmds on this host); nothing of Slurm is mocked.

``l`` submits the run, the Slurm host's header and findings say the job waits and why while
the nodes are drained; once they are resumed each node of the job is a host of its own, fed
by the probe started inside the allocation; ``k`` asks Slurm for the job, the confirm names
its id and nodes, and ``y`` cancels exactly that job.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from slurm_cluster import Cluster
from supervise_util import run_dirs
from support import open_kill_process_dialog, processes_naming, until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.slurm import NodeLink
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.core.base.config_slurm import SlurmConfig
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control.slurm.actions import submit_run
from dflash_tui.core.link.transport import LocalTransport

pytestmark = pytest.mark.slow
SIZE = (160, 50)


def app_on(root: Path, nodes: int, command: str = "echo started; sleep 300") -> DflashApp:
    host = HostConfig(
        command=command,
        run_root=str(root),
        scheduler="slurm",
        slurm=SlurmConfig(nodes=nodes, gpus_per_node=1),
    )
    return DflashApp(Config(hosts=(host,), interval=0.5))


def header(app: DflashApp) -> str:
    return str(app.detail().query_one(RunHeader).render())


def codes(app: DflashApp) -> list[str]:
    return [f.code for f in app.detail().query_one(FindingsList).findings or ()]


def job_state(cluster: Cluster, job: str) -> str:
    out = cluster.run("scontrol", "show", "job", job).stdout
    m = re.search(r"JobState=(\S+)", out)
    return m.group(1) if m else "?"


async def submit_while_drained(pilot: Pilot, app: DflashApp, cluster: Cluster) -> str:
    """``l`` with every node drained: the header and findings say queued; the job's id."""
    cluster.run("scontrol", "update", "nodename=n1,n2", "state=drain", "reason=fan")
    await until(pilot, lambda: app.samples >= 1, 30)
    await pilot.press("l")
    await until(pilot, lambda: "PENDING (" in header(app), 40)
    job = re.search(r"Slurm job (\d+) PENDING", header(app))
    assert job, header(app)
    await until(pilot, lambda: "queued" in codes(app), 20)
    assert codes(app).count("node-drained") == 2, codes(app)
    # The login node's own reading of the run (no process there) gives way to Slurm's.
    assert "run-exited" not in codes(app) and "log-missing" not in codes(app)
    assert app.current.diagnosis and app.current.diagnosis.run_state == "queued"
    return job.group(1)


async def kill_and_confirm(pilot: Pilot, app: DflashApp, cluster: Cluster, job: str) -> str:
    """``k``, the confirm's text, ``y``; the job reads CANCELLED at the end."""
    await pilot.press("k")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30)
    body = str(app.screen.query_one("#confirm-body").render())
    title = app.screen.title_text
    await pilot.press("y")
    await until(pilot, lambda: job_state(cluster, job) == "CANCELLED", 40)
    await until(pilot, lambda: not app.control.running, 40)
    return title + "\n" + body


async def test_the_app_shows_the_queued_reason_then_the_node_and_k_cancels_that_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    app = app_on(tmp_path / "runs", nodes=1)
    async with app.run_test(size=SIZE) as pilot:
        job = await submit_while_drained(pilot, app, cluster)
        node = app.host_states[1]
        assert node.key == "local/node1" and node.last is None  # no node yet: nothing drawn
        # Queued: nothing is probed there, and it is said so, not as connecting or down.
        await until(pilot, lambda: node.link == "idle", 20)
        assert "○ no job here" in app.screen.query_one(HostOverview).row_text(1)

        cluster.run("scontrol", "update", "nodename=n1,n2", "state=resume")
        await until(pilot, lambda: f"Slurm job {job} RUNNING on n1" in header(app), 40)
        await until(pilot, lambda: "queued" not in codes(app), 20)
        # The node, sampled by the probe inside the allocation, sees the job's processes.
        await until(pilot, lambda: node.diagnosis is not None and node.diagnosis.run is not None
                    and any("sleep 300" in p.cmd for p in node.snapshot.procs), 40)  # fmt: skip
        run_dir = run_dirs(tmp_path / "runs")[-1]
        assert node.diagnosis and node.diagnosis.run and node.diagnosis.run.id == run_dir.name
        await app.action_show_host(1)
        await until(pilot, lambda: f"node n1 of Slurm job {job} RUNNING" in header(app), 20)
        assert "n1" in app.screen.query_one(HostOverview).row_text(1)

        # l, k, r on the node wait on an action of its Slurm host, where they act.
        app.control.running[app.host_states[0].key] = "restart"
        assert app.check_action("control", ("kill",)) is None
        del app.control.running[app.host_states[0].key]

        said = await kill_and_confirm(pilot, app, cluster, job)  # k on the node: the job's
        assert f"Slurm job {job}" in said and "on n1" in said and run_dir.name in said, said
        # The job is gone: the node says no job runs there, not a link down retried for ever.
        await until(pilot, lambda: node.link == "idle", 20)
        assert "no job on this node" in header(app) and "DISCONNECTED" not in header(app)
    assert processes_naming(f"{run_dir}/") == []  # no process of the run is left


async def test_a_confirm_names_the_job_and_y_refuses_another_one_live_by_then(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The confirm's job id is the one ``y`` cancels: a job live by then that is not it
    (this one cancelled from outside, another submitted) is left running."""
    app = app_on(tmp_path / "runs", nodes=1)
    async with app.run_test(size=SIZE) as pilot:
        job = await submit_while_drained(pilot, app, cluster)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30)
        body = str(app.screen.query_one("#confirm-body").render())
        assert f"Slurm job {job}" in body, body
        grace = app.host_states[0].bridge.grace  # KILL is ours, after our grace, not KillWait
        assert (
            f"we send KILL if it still lives after {grace:.0f}s" in body and "KillWait" not in body
        ), body
        cluster.run("scancel", job)
        await until(pilot, lambda: job_state(cluster, job) == "CANCELLED", 20)
        other = await submit_run(LocalTransport(), app.host_states[0].cfg)
        assert other.ok and other.job_id and other.job_id != job, other.message
        await pilot.press("y")
        await until(pilot, lambda: not app.control.running, 30)
        assert job_state(cluster, other.job_id) == "PENDING"
        cluster.run("scancel", other.job_id)


async def test_the_overview_lists_both_nodes_of_a_two_node_job(
    cluster: Cluster, tmp_path: Path
) -> None:
    app = app_on(tmp_path / "runs", nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        job = await submit_while_drained(pilot, app, cluster)
        assert [s.key for s in app.host_states] == ["local", "local/node1", "local/node2"]
        cluster.run("scontrol", "update", "nodename=n1,n2", "state=resume")
        await until(pilot, lambda: all(s.last is not None for s in app.host_states[1:]), 60)
        overview = app.screen.query_one(HostOverview)
        rows = [overview.row_text(i) for i in (1, 2)]
        assert "n1" in rows[0] and "n2" in rows[1], rows
        assert f"Slurm job {job} RUNNING on n1, n2" in header(app), header(app)
        said = await kill_and_confirm(pilot, app, cluster, job)
        assert f"Slurm job {job}" in said and "on n1, n2" in said, said


async def test_auto_restart_in_the_app_requeues_a_job_killed_from_outside(
    cluster: Cluster, tmp_path: Path
) -> None:
    """``A`` on a Slurm host: a job Slurm ended for someone else is requeued (the same job id,
    through Slurm), never started around it on the login node."""
    app = app_on(tmp_path / "runs", nodes=1, command="echo started; sleep 300; :")  # `:` takes
    # the `--resume auto` a restart adds
    policy = replace(app.cfg.hosts[0].restart, backoff_s=0.5, max_backoff_s=0.5)
    app.host_states[0].cfg = replace(app.cfg.hosts[0], restart=policy)
    app.host_states[0].bridge.supervise_poll = 0.5
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1, 30)
        await pilot.press("l")
        await until(pilot, lambda: " RUNNING on n1" in header(app), 40)
        job = re.search(r"Slurm job (\d+) RUNNING", header(app))
        assert job, header(app)
        await pilot.press("A")
        await until(pilot, lambda: app.host_states[0].auto == "on", 10)
        await pilot.pause(1.5)  # a poll sees the job running first
        cluster.run("scancel", "--signal=KILL", job.group(1))
        await until(pilot, lambda: job_state(cluster, job.group(1)) != "RUNNING", 20)
        # Requeued: the same job runs again once the cluster's credential lifetime passed.
        await until(pilot, lambda: job_state(cluster, job.group(1)) == "RUNNING", 30)
        log = run_dirs(tmp_path / "runs")[-1] / "output.log"
        await until(pilot, lambda: log.read_text().count("started") == 2, 20)
        runs = [p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
        assert runs == [log.parent.name], runs  # no run started around Slurm
        await pilot.press("A")
        cluster.run("scancel", job.group(1))


async def test_k_on_a_nodes_pane_signals_the_process_on_that_node(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The process keys of a node's host act on the node, through a step inside the job
    (the process is verified by its start time there, as on any host)."""
    app = app_on(tmp_path / "runs", nodes=1)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1, 30)
        await pilot.press("l")
        node = app.host_states[1]

        def sleeper() -> int | None:
            procs = node.snapshot.procs if node.snapshot else ()
            return next((p.pid for p in procs if p.cmd.startswith("sleep 300")), None)

        await until(pilot, lambda: sleeper() is not None, 40)
        pid = sleeper()
        assert pid is not None
        await app.action_show_host(1)
        body = await open_kill_process_dialog(pilot, app, pid, "TERM", app.detail().procs())
        assert f"{pid}" in body
        await pilot.press("y")
        await until(pilot, lambda: not Path(f"/proc/{pid}").exists(), 30)
        await until(pilot, lambda: not app.control.running, 30)
        assert any(f"PID {pid}" in step for step in app.control.steps), app.control.steps
        # Sent through the step on the node the job holds (srun --jobid --overlap -w n1).
        link = node.transport
        assert isinstance(link, NodeLink) and [n for _, n in link.links] == ["n1"]
