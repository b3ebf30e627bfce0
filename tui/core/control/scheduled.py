"""The latest run and its relaunch, whoever starts runs on the host: this machine's or the
SSH host's shell (``direct``: the run directory and /proc say), or Slurm (the job, as Slurm
says). Both auto-restart loops, the app's (restart.supervise) and the headless supervisor's,
read and relaunch through these two, so a scheduler is chosen in one place."""

from __future__ import annotations

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.control.launch import LaunchResult, launch
from dflash_tui.core.control.script import fetch_run
from dflash_tui.core.control.slurm import supervise as slurm
from dflash_tui.core.link.transport import Transport


async def latest_run(transport: Transport, host: HostConfig) -> RunReport:
    """The latest run as its scheduler says now (ControlError when it cannot be asked)."""
    if host.scheduler == "slurm":
        return await slurm.job_report(transport, host)
    return await fetch_run(transport, host.run_root)


async def relaunch_run(
    transport: Transport, host: HostConfig, *, start_window: float, keep: int
) -> LaunchResult:
    """Start the run again after a crash: a direct launch, or a Slurm requeue (else the job
    submitted again, resumed)."""
    if host.scheduler == "slurm":
        return await slurm.relaunch(transport, host)
    return await launch(transport, host, start_window=start_window, keep=keep)
