"""What a run under Slurm adds to a host's status: the job as Slurm says it (the ``scheduler``
key of the status document), our run state from it, and the findings only Slurm can give.

Findings: ``queued`` (Slurm's reason and expected start), ``job-suspended`` for a job Slurm
holds stopped (SUSPENDED, STOPPED), ``node-down`` / ``node-drained`` for
a node the job holds or, while it waits, one of its partition's, ``scheduler-ended-job`` for a
job Slurm ended (NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, TIMEOUT), ``scheduler-unavailable`` when
Slurm cannot be asked. Every string in them came through ``safe_label`` (query.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.scheduled import REPLACED
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.control.slurm import query
from dflash_tui.core.control.slurm.query import SlurmJob, SlurmUnavailable
from dflash_tui.core.control.slurm.runs import SlurmRun, latest
from dflash_tui.core.diagnosis.finding import Finding, duration
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.link.transport import Transport, TransportError

NEXT_STEP = {
    "NODE_FAIL": "a node of the job failed: restart it (it is requeued or submitted again, "
    "resuming from the last checkpoint), and tell the cluster's admins",
    "PREEMPTED": "a job of higher priority took its nodes: restart it (it resumes from the "
    "last checkpoint), or ask for a partition or QOS that is not preempted",
    "OUT_OF_MEMORY": "a process of the job went past its memory limit: lower the batch size, or "
    "ask for more memory with sbatch_args (--mem), then restart it",
    "TIMEOUT": "it ran past its time limit: restart it to resume from the last checkpoint, or "
    "ask for a longer `time` in [slurm]",
    "BOOT_FAIL": "a node failed to boot: restart it, and tell the cluster's admins",
    "DEADLINE": "it reached its deadline: submit it again with a later one",
}
# Seconds Slurm's word on a run is kept between reads (KeptView): a job's state changes on
# the scale of its queue and its run, and slurmctld serves every user of the cluster.
SLURM_REFRESH_S = 10.0
_DOWN = ("down", "fail", "not_responding", "no_respond", "unknown")
_DRAINED = ("drain", "drained", "draining")


@dataclass(frozen=True)
class SchedulerView:
    """One reading of the run root's latest Slurm run; ``error`` when Slurm cannot be asked."""

    run: SlurmRun | None = None
    job: SlurmJob | None = None
    # node -> its sinfo state and the admins' reason
    nodes: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    error: str | None = None


async def read_view(transport: Transport, host: HostConfig) -> SchedulerView:
    """The latest run's job and the states of its nodes; never raises for Slurm's failures."""
    try:
        found = await latest(transport, host)
        if found is None:
            return SchedulerView()
        run, job = found
        nodes = await query.node_states(transport, job) if job.job_id else {}
        return SchedulerView(run, job, nodes)
    except (SlurmUnavailable, ControlError, TransportError) as exc:
        return SchedulerView(error=str(exc))


def _node_findings(view: SchedulerView) -> list[Finding]:
    job = view.job
    assert job is not None
    holds = "holds" if job.nodes else "may run on"
    out = []
    for node, (state, reason) in view.nodes.items():
        base = state.rstrip("*~#!%$@^-")
        if reason:
            state = f"{state} ({reason})"
        if any(base.startswith(d) for d in _DRAINED):
            out.append(Finding("node-drained", "warning" if not job.nodes else "error", (),
                f"node {node} that job {job.job_id} {holds} is {state}: Slurm starts nothing "
                "new on it; the cluster's admins resume it (scontrol update state=resume)",
            ))  # fmt: skip
        elif any(base.startswith(d) for d in _DOWN):
            out.append(Finding("node-down", "error", (),
                f"node {node} that job {job.job_id} {holds} is {state}: a job on it fails "
                "(NODE_FAIL); the cluster's admins bring it back",
            ))  # fmt: skip
    return out


def _suspended_text(job: SlurmJob) -> str:
    on = f" on {', '.join(job.nodes)}" if job.nodes else ""
    return (
        f"job {job.job_id} is suspended by Slurm ({job.state}){on}: its processes are stopped "
        "and take no step, and it keeps its nodes; it goes on where it stopped once resumed "
        "(scontrol resume, by the cluster's admins, or its gang scheduling's turn)"
    )


def findings(view: SchedulerView) -> list[Finding]:
    """The findings of one reading (pure)."""
    if view.error is not None:
        return [Finding("scheduler-unavailable", "error", (),
            f"Slurm cannot be asked about the run: {view.error}; its state is unknown until "
            "it answers", None)]  # fmt: skip
    job = view.job
    if job is None or not job.job_id:
        return []
    out: list[Finding] = []
    if job.state in query.QUEUED:
        why = f" ({job.reason})" if job.reason else ""
        when = f"; Slurm expects it to start at {job.start}" if job.start else ""
        text = f"job {job.job_id} is queued{why}{when}: it starts when Slurm gives it its nodes"
        out.append(Finding("queued", "info", (), text))
    if job.state in query.SUSPENDED:
        out.append(Finding("job-suspended", "warning", (), _suspended_text(job)))
    if job.state in NEXT_STEP:
        text = f"Slurm ended job {job.job_id}: {job.state}; {NEXT_STEP[job.state]}"
        out.append(Finding("scheduler-ended-job", "error", (), text, "restart"))
    return out + _node_findings(view)


class KeptView:
    """Slurm's latest word on a host's run, read again at most every ``SLURM_REFRESH_S``:
    a sample every few seconds would otherwise send four to six Slurm commands each time to
    a slurmctld the whole cluster shares. ``status --watch``, ``wait``, the metrics exporter
    and the app put the kept view into each sample."""

    def __init__(self, transport: Transport, host: HostConfig) -> None:
        self.transport, self.host = transport, host
        self.view: SchedulerView | None = None
        self.read_at = -math.inf  # time.monotonic() of the last read

    async def read(self, fresh: bool = False) -> SchedulerView:
        """The kept view, read again when older than ``SLURM_REFRESH_S`` or ``fresh``."""
        now = time.monotonic()
        if self.view is None or fresh or now - self.read_at >= SLURM_REFRESH_S:
            self.view = await read_view(self.transport, self.host)
            self.read_at = now
        return self.view


def slurm_run_state(view: SchedulerView, current: str) -> str:
    """Our run state with Slurm's word on it: the job's while Slurm names its state, unknown
    when Slurm cannot be asked, else ``current`` (the run directory's own reading)."""
    job = view.job
    if view.run is not None and job is not None and job.state != "UNKNOWN":
        return job.run_state
    return "unknown" if view.error is not None else current


def replaced(view: SchedulerView) -> frozenset[str]:
    """The codes of the login node's findings that Slurm's word replaces: those of its reading
    of the run once a job is named; none without one (sbatch refused it: the run directory's
    own word, launch-failed, stands)."""
    job = view.job
    return REPLACED if job is not None and job.job_id else frozenset()


def overlay(doc: dict[str, Any], view: SchedulerView) -> None:
    """Put Slurm's word into a host's status document (``scheduler``, run state, findings)."""
    job = view.job
    # No job to name (none submitted yet, or Slurm does not answer): the shape, all unknown.
    doc["scheduler"] = (job or SlurmJob("", "")).to_json()
    if job is None or not job.job_id:
        doc["scheduler"].update(job_id=None, state=None)
    run = doc.setdefault("run", {})
    if view.run is not None and job is not None:
        run["id"] = view.run.run_id
        if job.state != "UNKNOWN":
            run["exit_code"] = job.exit_code
    run["state"] = slurm_run_state(view, run.get("state", "unknown"))
    gone = replaced(view)
    kept = [f for f in doc.get("findings", []) if f.get("code") not in gone]
    doc["findings"] = [f.to_json() for f in findings(view)] + kept


def with_view(diag: Diagnosis, view: SchedulerView, *, own: bool) -> Diagnosis:
    """``diag`` with Slurm's word on the run: the job's state, the findings it replaces
    dropped and, with ``own``, Slurm's findings put first (a node's pane shows none of them;
    ``status``'s table prints them as ``lines``)."""
    gone = replaced(view)
    kept = tuple(f for f in diag.findings if f.code not in gone)
    found = tuple(findings(view)) if own else ()
    return replace(diag, run_state=slurm_run_state(view, diag.run_state), findings=found + kept)


def slurm_job_text(job: SlurmJob, *, start: bool = False) -> str:
    """The job in one line: ``Slurm job 12 PENDING (Resources) on n1, 10m00s left``; with
    ``start``, a queued job's expected start when Slurm knows one."""
    why = f" ({job.reason})" if job.reason else ""
    on = f" on {', '.join(job.nodes)}" if job.nodes else ""
    left = f", {duration(job.time_left_s)} left" if job.time_left_s else ""
    code = f", exit code {job.exit_code}" if job.exit_code is not None else ""
    when = (
        f", expected start {job.start}" if start and job.start and job.run_state == "queued" else ""
    )
    return f"Slurm job {job.job_id} {job.state}{why}{on}{left}{code}{when}"


def lines(view: SchedulerView) -> list[str]:
    """The job and Slurm's findings in plain lines, for ``status``'s table (made safe by the
    caller, as everything it prints)."""
    job = view.job
    out = [slurm_job_text(job)] if job is not None and job.job_id else []
    return out + [f"{f.severity}: {f.message}" for f in findings(view)]
