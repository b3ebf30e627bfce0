"""A Slurm job held with its processes stopped (SUSPENDED: an admin's scontrol suspend or gang
scheduling; STOPPED: a STOP signal) is ``suspended``: not running (no step is taken, a wait
for ``healthy`` or ``started`` is not reached, its time does not make the run stable), and not
ended (auto-restart does not requeue it, no alert says it ended, a launch is still refused).
Slurm's findings say so (``job-suspended``, a warning) and the timeline marks it held and
let go on."""

from __future__ import annotations

import pytest
from fakes.rows import gpu_row as gpu

from dflash_train.topology import Topology
from dflash_tui.cli.until import parse_until, verdict_on
from dflash_tui.core.alerts.events import RunWatch
from dflash_tui.core.base.rundir import ALIVE_STATES, ENDED_STATES, RUN_STATES
from dflash_tui.core.base.snapshot import RunRecord, Snapshot
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import AutoRestart
from dflash_tui.core.control.slurm.findings import SchedulerView, findings, overlay, with_view
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.control.slurm.runs import SlurmRun
from dflash_tui.core.diagnosis.severity import RUN_STATE
from dflash_tui.core.diagnosis.timeline import Timeline
from dflash_tui.core.diagnosis.tracker import Tracker

POLICY = RestartPolicy(enabled=True, retries=3, backoff_s=2, max_backoff_s=5, stable_s=60)
HELD = ("SUSPENDED", "STOPPED")
T0 = 1_764_669_600.0
RUN = SlurmRun("20261206-010000-abcd", "/runs/20261206-010000-abcd", "12")


@pytest.mark.parametrize("slurm", HELD)
def test_a_held_job_is_suspended_and_still_live(slurm: str) -> None:
    job = SlurmJob("7", slurm, nodes=("n1",))
    assert job.run_state == "suspended" and job.live
    assert "suspended" in RUN_STATES and "suspended" not in ALIVE_STATES + ENDED_STATES
    assert RUN_STATE["suspended"] == "warning"
    assert SlurmJob("7", "RUNNING").run_state == "running"


@pytest.mark.parametrize("slurm", HELD)
def test_auto_restart_waits_out_a_held_job(slurm: str) -> None:
    m = AutoRestart(POLICY)
    run = RunRecord(id="a", dir="/r/a", pgid=1, started_at=0)
    assert m.observe(run, "running", 10).action == "watch"
    m.failures = 2  # earlier crashes of this run root
    state = SlurmJob("7", slurm).run_state
    decision = m.observe(run, state, 10_000)  # held long past stable_s
    assert decision.action == "watch" and decision.message == "run suspended"
    assert m.failures == 2  # a held job is no stable run: the crash count stands
    # Its end, when it comes, is judged as any: here a crash, restarted.
    gone = RunRecord(id="a", dir="/r/a", pgid=1, started_at=0, exit_code=1, ended_at=10_001)
    assert m.observe(gone, "exited", 10_001).action == "restart"


def test_no_alert_says_a_held_job_ended() -> None:
    watch = RunWatch()
    run = RunRecord(id="a", dir="/r/a", pgid=1, started_at=0)
    assert watch.observe(run, "running", {0}) is None
    assert watch.observe(run, SlurmJob("7", "SUSPENDED").run_state, {0}) is None
    assert watch.observe(run, "running", {0}) is None  # resumed
    said = watch.observe(RunRecord(id="a", dir="/r/a", exit_code=3), "exited", {0})
    assert said is not None and said.code == "run-exited"


def test_a_wait_on_a_held_job_waits() -> None:
    doc = {"run": {"id": "a", "state": "suspended", "exit_code": None},
           "progress": {"step": 5, "loss": 1.0}, "findings": []}  # fmt: skip
    for outcome in ("started", "healthy", "exited"):  # its steps so far still count
        verdict, line = verdict_on(doc, parse_until(outcome))
        assert verdict == "pending", (outcome, line)


@pytest.mark.parametrize("slurm", HELD)
def test_a_held_job_is_a_warning_finding(slurm: str) -> None:
    (held,) = findings(SchedulerView(RUN, SlurmJob("12", slurm, nodes=("n1", "n2"))))
    assert (held.code, held.severity) == ("job-suspended", "warning")
    assert held.message.startswith(f"job 12 is suspended by Slurm ({slurm}) on n1, n2: ")
    assert "scontrol resume" in held.message
    running = findings(SchedulerView(RUN, SlurmJob("12", "RUNNING", nodes=("n1",))))
    assert "job-suspended" not in [f.code for f in running]
    doc: dict = {"run": {"state": "exited"}, "findings": []}
    overlay(doc, SchedulerView(RUN, SlurmJob("12", slurm, nodes=("n1",))))
    assert doc["run"]["state"] == "suspended"
    assert [f["code"] for f in doc["findings"]] == ["job-suspended"]
    assert doc["findings"][0]["severity"] == "warning"


def sample(t: float) -> Snapshot:
    """The login node's sample: the run directory, none of the job's processes there."""
    run = {"id": RUN.run_id, "dir": RUN.dir, "pid": 999999, "pgid": 999999,
           "started_at": T0 - 60}  # fmt: skip
    return Snapshot.from_dict({
        "time": t, "host": "login", "telemetry": {"source": "nvidia-smi"},
        "gpus": [gpu(0, 0, 0), gpu(1, 0, 0)], "procs": [], "run": run,
    })  # fmt: skip


def test_the_timeline_marks_a_job_held_then_let_go_on() -> None:
    tracker, timeline = Tracker(Topology.parse("0:1"), live=True), Timeline()
    said = []
    for i, slurm in enumerate(("RUNNING", "SUSPENDED", "SUSPENDED", "RUNNING")):
        snap = sample(T0 + 10 * i)
        view = SchedulerView(RUN, SlurmJob("12", slurm, nodes=("n1",)))
        diag = with_view(tracker.add(snap), view, own=True)
        said.append([(e.kind, e.severity, e.text) for e in timeline.fold(snap, diag)])
    assert said[0] == [("attached", "info", f"attached to run {RUN.run_id} (PID 999999, "
                        "PGID 999999), running")]  # fmt: skip
    assert said[1] == [("suspended", "warning", "suspended by Slurm: its processes are stopped")]
    assert said[2] == []  # said once, while it stays held
    assert said[3] == [("resumed", "info", "resumed by Slurm: it goes on where it stopped")]
