"""The run keys of a host under Slurm (``scheduler = "slurm"``), through the scheduler:
``l`` submits the run (sbatch), ``k`` cancels its job (scancel) and ``r`` requeues it, or
cancels it and submits it again resumed (tui/core/control/slurm/actions.py).

``k`` asks Slurm for the run root's live job when pressed, builds one ``JobKillRequest``
naming that job id and its nodes, and the confirm shows it; ``y`` cancels exactly that job,
or nothing when another one is live by then. A node's pane (tui/app/host/slurm.py) acts on
its Slurm host's job. Its bridge (slurm_bridge.py) loads with the first Slurm host.
"""

from __future__ import annotations

from typing import Protocol

from rich.text import Text

from dflash_tui.app.control.bridge import Bridge, ControlError
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.control.requests import (
    ControlRequest,
    JobKillRequest,
    LaunchRequest,
    RestartRequest,
)
from dflash_tui.app.host.state import HostState
from dflash_tui.app.ports import AppPort
from dflash_tui.core.base.config_types import HostConfig, JobConfig
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.link.transport import Transport

KEYS = ("launch", "kill", "restart")  # the run keys that go through the scheduler


def make_bridge(
    transport: Transport,
    host: HostConfig,
    job: tuple[JobConfig, tuple[HostConfig, ...]] | None,
) -> Bridge:
    """The run control of ``host``: through Slurm for a Slurm host."""
    if host.scheduler == "slurm":
        # Imported here: the Slurm modules load only when a Slurm host is made, so the app
        # starts without them for direct hosts.
        from dflash_tui.app.control.slurm_bridge import SlurmBridge

        return SlurmBridge(transport, host)
    return Bridge(transport, host, job)


class Control(Protocol):
    """What the Slurm keys need of the app's control actions (tui/app/control/actions.py)."""

    @property
    def app(self) -> AppPort: ...

    def ask(self, req: ControlRequest, screen: ConfirmScreen) -> None: ...

    def send(self, req: ControlRequest) -> None: ...


class SlurmKeys:
    """``l``, ``k`` and ``r`` on a Slurm host, or on a node of its job."""

    def __init__(self, control: Control) -> None:
        self.control = control

    def key(self, name: str) -> None:
        state = self.control.app.current.owner
        if name == "launch":
            self.control.send(LaunchRequest(state.key))  # submit_run refuses a second job
        elif name == "kill":
            self.kill(state)
        elif name == "restart":
            self.restart(state)

    def kill(self, state: HostState) -> None:
        """Ask Slurm for the live job now; the confirm names it, ``y`` cancels that job."""
        app = self.control.app

        async def ask_then_confirm() -> None:
            try:
                found = await state.bridge.live_job()
            except ControlError as exc:
                app.notify(f"Slurm was not asked: {exc}", severity="error", timeout=8)
                return
            if found is None:
                app.notify(f"no queued or running Slurm job on {state.key}", severity="warning")
                return
            from dflash_tui.core.control.slurm.actions import kill_confirm  # a Slurm host's

            run, job = found
            text = kill_confirm(run, job)
            req = JobKillRequest(state.key, run.run_id, job.job_id, state.bridge.grace, text)
            title = f"Cancel Slurm job {job.job_id} on {state.key}?"
            self.control.ask(req, ConfirmScreen(title, slurm_kill_text(req), "Kill"))

        app.notify(f"asking Slurm for the job of {state.key} …", timeout=2)
        app.run_worker(ask_then_confirm(), name=f"slurm job {state.key}",
                       group=f"kill-targets:{state.index}", exclusive=True)  # fmt: skip

    def restart(self, state: HostState) -> None:
        diag = state.diagnosis
        rid = diag.run.id if diag is not None and diag.run is not None else None
        req = RestartRequest(state.key, rid, None, state.cfg.command)
        body = Text("The latest job is requeued (scontrol requeue, the same job id) where ")
        body.append("Slurm may; else it is cancelled and the command submitted again with ")
        body.append("--resume auto:\n")
        body.append(f"  {safe_label(req.command, 300)}\n", style="bold")
        what = f"run {rid}" if rid else "the run"
        self.control.ask(req, ConfirmScreen(f"Restart {what} on {state.key}?", body, "Restart"))


def slurm_kill_text(req: JobKillRequest) -> Text:
    """The kill confirm's body: what ``y`` does, naming the job id, its nodes and our grace."""
    t = Text(safe_label(req.text, 600) + "\n", style="bold")
    t.append(f"Slurm sends TERM to every process of job {req.job_id}; ")
    t.append(f"we send KILL if it still lives after {req.grace:.0f}s; ", style="bold")
    t.append("the job alone is cancelled: another job live by then is refused.")
    return t
