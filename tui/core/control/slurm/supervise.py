"""The supervisor's two seams for a run under Slurm: what the run is (a RunReport whose state
is Slurm's word, mapped to ours) and how it is restarted (restart in actions.py: requeue, else
a new submission, resuming either way).

The auto-restart policy (policy.py) judges the run as it judges a direct one: COMPLETED and
FAILED are ``exited`` with the job's code (the policy's success codes decide); CANCELLED by our
kill (its ``kill_requested`` record) is not restarted, by anyone else it is; NODE_FAIL,
PREEMPTED, OUT_OF_MEMORY and TIMEOUT are ended by the scheduler, each a restart under the
policy's retries and backoff.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport, parse_exit
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.base.timings import START_WINDOW_S
from dflash_tui.core.control.launch import LaunchResult
from dflash_tui.core.control.slurm import actions, runs
from dflash_tui.core.link.transport import Transport


@dataclass(frozen=True)
class SlurmReport(RunReport):
    """A run directory's reading whose state is its job's, as Slurm says it."""

    scheduled: str = "none"

    def state(self, start_window: float = START_WINDOW_S) -> str:
        return self.scheduled


async def job_report(transport: Transport, host: HostConfig) -> SlurmReport:
    """The latest run under Slurm (ControlError when Slurm cannot be asked)."""
    now = time.time()
    found = await runs.latest(transport, host)
    if found is None:
        return SlurmReport(now=now)
    run, job = found
    record = RunRecord(
        id=run.run_id,
        dir=run.dir,
        started_at=run.started_at,
        exit_code=job.exit_code,
        ended_at=parse_exit(run.exit_record)[1] if not job.live else None,
        launch_error=run.launch_error,
        kill_requested_at=run.kill_requested,
        log_path=f"{run.dir}/output.log",
        events_path=f"{run.dir}/events.jsonl",
    )
    state = "launch-failed" if run.launch_error and not job.job_id else job.run_state
    return SlurmReport(now=now, record=record, scheduled=state)


async def relaunch(transport: Transport, host: HostConfig) -> LaunchResult:
    """The supervisor's restart, as a launch result."""
    res = await actions.requeue_or_resubmit(transport, host)
    return LaunchResult(
        res.ok,
        res.state,
        res.message,
        run_id=res.run_id if res.ok else None,
        dir=res.dir,
        error=None if res.ok else res.message,
        refused=res.refused,
    )
