"""What the app draws of a host under Slurm from one reading of Slurm (tui/app/host/slurm.py):
the run state is the job's, Slurm's findings take the place of the login node's reading of
the run, and the header's line says the job, its reason and its expected start."""

from __future__ import annotations

from fakes.rows import gpu_row as gpu

from dflash_train.topology import Topology
from dflash_tui.app.host.slurm import slurm_diagnosis, slurm_job_line
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control.slurm.findings import SchedulerView
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.control.slurm.runs import SlurmRun
from dflash_tui.core.diagnosis.tracker import Tracker

T0 = 1_764_669_600.0
RUN = SlurmRun("20261206-010000-abcd", "/runs/20261206-010000-abcd", "12")
PENDING = SlurmJob("12", "PENDING", reason="ReqNodeNotAvail", start="2026-12-06T03:00:00")


def login_sample() -> Snapshot:
    """The login node's sample: the run directory with no process of the run there."""
    run = {"id": RUN.run_id, "dir": RUN.dir, "pid": 999999, "pgid": 999999,
           "started_at": T0 - 60, "exit_code": 1, "ended_at": T0 - 5}  # fmt: skip
    return Snapshot.from_dict({
        "time": T0, "host": "login", "telemetry": {"source": "nvidia-smi"},
        "gpus": [gpu(0, 0, 0), gpu(1, 0, 0)], "procs": [], "run": run,
    })  # fmt: skip


def test_a_queued_job_reads_queued_with_slurms_findings_in_place_of_the_login_nodes() -> None:
    diag = Tracker(Topology.parse("0:1"), live=True).add(login_sample())
    assert diag.run_state == "exited" and "run-exited" in [f.code for f in diag.findings]
    view = SchedulerView(RUN, PENDING, {"n1": ("drained", "fan")})
    got = slurm_diagnosis(diag, view, node=False)
    codes = [f.code for f in got.findings]
    assert got.run_state == "queued" and codes[:2] == ["queued", "node-drained"], codes
    assert "run-exited" not in codes
    # A node's host: the job's state, none of Slurm's findings (its Slurm host shows them).
    on_node = slurm_diagnosis(diag, view, node=True)
    assert on_node.run_state == "queued" and not {"queued", "node-drained"} & {
        f.code for f in on_node.findings
    }


def test_slurm_unavailable_makes_the_state_unknown_and_says_so() -> None:
    diag = Tracker(Topology.parse("0:1"), live=True).add(login_sample())
    view = SchedulerView(error="squeue is not on PATH on local")
    got = slurm_diagnosis(diag, view, node=False)
    assert got.run_state == "unknown"
    assert next(f.code for f in got.findings) == "scheduler-unavailable"
    assert slurm_job_line(view) == "Slurm cannot be asked"


def test_the_header_line_says_the_reason_and_expected_start_then_the_nodes() -> None:
    line = slurm_job_line(SchedulerView(RUN, PENDING))
    assert line == "Slurm job 12 PENDING (ReqNodeNotAvail), expected start 2026-12-06T03:00:00"
    running = SlurmJob("12", "RUNNING", nodes=("n1", "n2"), time_left_s=600)
    assert (
        slurm_job_line(SchedulerView(RUN, running)) == "Slurm job 12 RUNNING on n1, n2, 10m00s left"
    )
    assert slurm_job_line(SchedulerView(RUN, running), "n2") == (
        "node n2 of Slurm job 12 RUNNING on n1, n2, 10m00s left"
    )
    assert slurm_job_line(None) is None
