"""``dflash-tui status``: one sample per host, diagnosed, as JSON or a table."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from dflash_tui.core.base.config import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import terminal_safe, with_host
from dflash_tui.core.diagnosis.document import iso_time, to_json
from dflash_tui.core.diagnosis.job import MemberView, job_line, job_state
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.feed import sample_once
from dflash_tui.core.link.transport import TransportError

_RANK = {"info": 0, "warning": 1, "error": 2}


async def diagnose_host(host: HostConfig, table: bool = True) -> tuple[dict[str, Any], list[Any]]:
    """The host's document, and the table's parts when ``table`` (Rich is imported only then:
    ``--json`` pays for none of it)."""
    transport = make_transport(host)
    try:
        snap = await sample_once(transport, host)
    finally:
        await transport.close()
    tracker = Tracker(host.topology, thresholds_for(host), live=False)
    doc, diag = status_doc(host, tracker, snap)
    if not table:
        return doc, []
    from dflash_tui.cli.table import render

    return doc, render(diag, host, tracker.progress)


def status_doc(host: HostConfig, tracker: Tracker, snap: Snapshot) -> tuple[dict[str, Any], Any]:
    """One sample through the diagnosis into the status document (also ``metrics``' feed)."""
    diag = tracker.add(snap)
    mtime = next((lg.mtime for lg in snap.logs if lg.is_run_log), None)
    return to_json(diag, host, tracker.progress, mtime), diag


def unreachable(host: HostConfig, error: str) -> dict[str, Any]:
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
        "progress": None,
    }


async def _gather(cfg: Config, table: bool) -> list[tuple[dict[str, Any], list[Any]]]:
    async def one(h: HostConfig) -> tuple[dict[str, Any], list[Any]]:
        try:
            return await diagnose_host(h, table)
        except TransportError as exc:
            return unreachable(h, with_host(h.label, str(exc))), []

    return list(await asyncio.gather(*(one(h) for h in cfg.hosts)))


def run_status(cfg: Config, args: argparse.Namespace) -> int:
    if args.openmetrics:
        from dflash_tui.cli.metrics import openmetrics_module

        if openmetrics_module() is None:
            return 1
    results = asyncio.run(_gather(cfg, not (args.json or args.openmetrics)))
    docs = [doc for doc, _ in results]
    line = _mark_job(cfg, docs)
    if args.openmetrics:  # node_exporter's textfile collector, or a one-off look
        from dflash_tui.core.export.openmetrics import exposition

        sys.stdout.write(exposition(docs, time.time()).decode())
    elif args.json:
        out = docs[0] if len(docs) == 1 else docs
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from rich.console import Console

        # Piped output gets a wide console so paths and messages are not cut mid-word.
        console = Console(width=None if sys.stdout.isatty() else 200)
        if line:  # run ids and labels are the hosts' and the config's: made safe
            console.print(terminal_safe(line), markup=False, highlight=False)
        for doc, parts in results:
            if not parts:
                # The error names the host and quotes its or the container runtime's words.
                console.print(terminal_safe(str(doc.get("error"))), markup=False)
            for part in parts:
                console.print(part)
    failing = any("error" in d for d in docs)
    if args.fail_on:
        worst = max((_RANK[f["severity"]] for d in docs for f in d["findings"]), default=-1)
        failing = failing or worst >= _RANK[args.fail_on]
    return 1 if failing else 0


def _member(label: str, doc: dict[str, Any]) -> MemberView:
    run, progress = doc.get("run") or {}, doc.get("progress") or {}
    return MemberView(label, str(run.get("state", "unknown")), run.get("id"), progress.get("step"))


def _mark_job(cfg: Config, docs: list[dict[str, Any]]) -> str | None:
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
