"""A Slurm job held with its processes stopped (SUSPENDED: an admin's scontrol suspend or gang
scheduling; STOPPED: a STOP signal) is ``suspended``: not running (no step is taken, a wait
for ``healthy`` or ``started`` is not reached, its time does not make the run stable), and not
ended (auto-restart does not requeue it, no alert says it ended, a launch is still refused)."""

from __future__ import annotations

import pytest

from dflash_tui.cli.until import parse_until, verdict_on
from dflash_tui.core.alerts.events import RunWatch
from dflash_tui.core.base.rundir import ALIVE_STATES, ENDED_STATES, RUN_STATES
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import AutoRestart
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.diagnosis.severity import RUN_STATE

POLICY = RestartPolicy(enabled=True, retries=3, backoff_s=2, max_backoff_s=5, stable_s=60)
HELD = ("SUSPENDED", "STOPPED")


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
