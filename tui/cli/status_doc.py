"""One host's ``status`` document: a sample through the diagnosis (``status``, its ``--watch``
and ``metrics`` share it), the document of a host that could not be sampled, and a job's
members marked with the job's state."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import with_host
from dflash_tui.core.diagnosis.document import iso_time, to_json
from dflash_tui.core.diagnosis.job import MemberView, job_line, job_state
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker

if TYPE_CHECKING:  # the Slurm modules load only for a Slurm host
    from dflash_tui.core.control.slurm.findings import SchedulerView


def host_document(
    host: HostConfig, snap: Snapshot, table: bool, view: SchedulerView | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """The host's document, and the table's parts when ``table`` (Rich is imported only then:
    ``--json`` pays for none of it); ``view``: Slurm's word on a Slurm host's run."""
    tracker = Tracker(host.topology, thresholds_for(host), live=False)
    doc, diag = status_doc(host, tracker, snap, view)
    if not table:
        return doc, []
    from dflash_tui.cli.table import render

    return doc, render(diag, host, tracker.progress)


def status_doc(
    host: HostConfig, tracker: Tracker, snap: Snapshot, view: SchedulerView | None = None
) -> tuple[dict[str, Any], Any]:
    """One sample through the diagnosis into the status document (also ``metrics``' feed).
    With ``view`` (a Slurm host), Slurm's word is put in before either is made, so the table
    and the document say the same run state and findings."""
    diag = tracker.add(snap)
    if view is not None:
        from dflash_tui.core.control.slurm.findings import with_view

        diag = with_view(diag, view, own=False)
    mtime = next((lg.mtime for lg in snap.logs if lg.is_run_log), None)
    doc = to_json(diag, host, tracker.progress, mtime)
    if view is not None:
        from dflash_tui.core.control.slurm.findings import overlay

        overlay(doc, view)
    return doc, diag


def unreachable(host: HostConfig, error: str) -> dict[str, Any]:
    """The document of a host whose sample could not be taken; ``error`` names the host (once)."""
    error = with_host(host.label, error)
    return {
        "schema": 1,
        "host": host.label,
        "container": host.container,
        "time": iso_time(time.time()),
        "error": error,
        "topology": host.topology.to_json(),
        "telemetry": "none",
        # The run's state cannot be read: same shape as a reachable host's, all unknown.
        "run": {
            "state": "unknown",
            "id": None,
            "pid": None,
            "pgid": None,
            "exit_code": None,
            "started_at": None,
            "logs": [],
        },
        "gpus": [],
        "findings": [
            {"code": "host-unreachable", "severity": "error", "gpus": [], "message": error}
        ],
        "supervisor": None,
        "scheduler": None,
        "progress": None,
    }


def _member(label: str, doc: dict[str, Any]) -> MemberView:
    run, progress = doc.get("run") or {}, doc.get("progress") or {}
    return MemberView(label, str(run.get("state", "unknown")), run.get("id"), progress.get("step"))


def mark_job(cfg: Config, docs: list[dict[str, Any]]) -> str | None:
    """With ``--host JOB``: each member's document gets its ``job`` (name, node rank, nodes,
    the job's state); the job's one line for the table."""
    job = cfg.job
    if job is None:
        return None
    members = [_member(h.label, d) for h, d in zip(cfg.hosts, docs, strict=True)]
    state = job_state([m.state for m in members])
    for rank, doc in enumerate(docs):
        doc["job"] = {"name": job.name, "node_rank": rank, "nnodes": job.nnodes, "state": state}
    return job_line(job.name, members)
