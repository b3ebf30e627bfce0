"""The run control of a Slurm host (``scheduler = "slurm"``): ``l``, ``k`` and ``r`` through
the scheduler (tui/core/control/slurm/actions.py). Apart from the keys (slurm.py) so that it,
and the Slurm modules it needs, load only when the first Slurm host is made."""

from __future__ import annotations

from dflash_tui.app.control.bridge import Bridge, ControlError, StepFn, outcome
from dflash_tui.core.control.slurm import actions as slurm
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.control.slurm.runs import SlurmRun, live_job


class SlurmBridge(Bridge):
    """Run control of a Slurm host: its launch, kill and restart go through Slurm (on the
    login node, over the host's one transport); the rest is the login node's, as any host's."""

    async def launch(self, step: StepFn) -> str:
        step(f"sbatch: {self.host.command}")
        progress = self._progress(step)
        res = await self._reach(slurm.submit_run(self.transport, self.host, progress=progress))
        return outcome(res.ok, res.message)

    async def kill(self, step: StepFn, run_id: str, job_id: str | None = None) -> str:
        """Cancel job ``job_id`` (the one the confirm named); without one, nothing."""
        if job_id is None:
            raise ControlError(f"run {run_id}: no Slurm job was named, so none is cancelled")
        step(f"scancel {job_id}; KILL after {self.grace:.0f}s")
        res = await self._reach(
            slurm.cancel_run(self.transport, self.host, grace=self.grace,
                             progress=self._progress(step), job_id=job_id)
        )  # fmt: skip
        return outcome(res.ok, res.message)

    async def restart(self, step: StepFn, run_id: str | None) -> str:
        step("scontrol requeue, else scancel and sbatch --resume auto")
        res = await self._reach(
            slurm.requeue_or_resubmit(self.transport, self.host, grace=self.grace,
                                      progress=self._progress(step), run_id=run_id)
        )  # fmt: skip
        return outcome(res.ok, res.message)

    async def live_job(self) -> tuple[SlurmRun, SlurmJob] | None:
        """The run root's queued or running job, as Slurm says now."""
        return await self._reach(live_job(self.transport, self.host))
