"""The latest run and its relaunch, whoever starts runs on the host: this machine's or the
SSH host's shell (``direct``: the run directory and /proc say), or Slurm (the job, as Slurm
says). Both auto-restart loops, the app's (restart.supervise) and the headless supervisor's,
read and relaunch through these two, so a scheduler is chosen in one place.

The Slurm modules are imported only in the Slurm branches: a host run directly (most of them)
never loads them, and the app and the supervisor start without their import time."""

from __future__ import annotations

from collections.abc import Sequence

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.control.launch import LaunchResult, launch
from dflash_tui.core.control.script import fetch_run
from dflash_tui.core.diagnosis.finding import Finding
from dflash_tui.core.link.transport import Transport

# The run findings the login node's own reading would give of a run under Slurm: there the
# job's processes are never seen, so its run directory reads as ended; Slurm's word replaces
# them. Here, not in the Slurm package, so the supervisor filters them without loading it.
REPLACED = frozenset({"launch-failed", "run-exited", "log-missing", "no-progress"})


async def latest_run(transport: Transport, host: HostConfig) -> RunReport:
    """The latest run as its scheduler says now (ControlError when it cannot be asked)."""
    if host.scheduler == "slurm":
        from dflash_tui.core.control.slurm import supervise as slurm  # only Slurm hosts load it

        return await slurm.job_report(transport, host)
    return await fetch_run(transport, host.run_root)


async def relaunch_run(
    transport: Transport, host: HostConfig, *, start_window: float, keep: int
) -> LaunchResult:
    """Start the run again after a crash: a direct launch, or a Slurm requeue (else the job
    submitted again, resumed)."""
    if host.scheduler == "slurm":
        from dflash_tui.core.control.slurm import supervise as slurm  # only Slurm hosts load it

        return await slurm.relaunch(transport, host)
    return await launch(transport, host, start_window=start_window, keep=keep)


def trusted(host: HostConfig, findings: Sequence[Finding]) -> list[Finding]:
    """The host's own findings that hold for its run: all of them for a direct run; under
    Slurm, not its reading of the run itself (the job's processes are on the nodes, not the
    login node), which Slurm's word replaces."""
    if host.scheduler != "slurm":
        return list(findings)
    return [f for f in findings if f.code not in REPLACED]
