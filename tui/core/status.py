"""The status document (schema 1, DESIGN.md) and its readable table."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.table import Table
from rich.text import Text

from tui.core.config import HostConfig
from tui.core.diagnose import Diagnosis
from tui.core.finding import duration
from tui.core.rundir import exit_meaning
from tui.core.sanitize import printable

SCHEMA = 1


def iso_time(t: float | None) -> str | None:
    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_json(diag: Diagnosis, host: HostConfig) -> dict[str, Any]:
    run = diag.run
    return {
        "schema": SCHEMA,
        "host": host.label,
        "container": host.container,
        "time": iso_time(diag.time),
        "topology": diag.topology.to_json(),
        "telemetry": diag.telemetry_source,
        "run": {
            "state": diag.run_state,
            "id": run.id if run else None,
            "pid": run.pid if run else None,
            "pgid": run.pgid if run else None,
            "exit_code": run.exit_code if run else None,
            "exit_meaning": exit_meaning(run.exit_code)
            if run and run.exit_code is not None
            else None,
            "started_at": iso_time(run.started_at) if run else None,
            "dir": run.dir if run else None,
            "logs": [
                {"path": lg.path, "exists": lg.exists, "size": lg.size, "run_log": lg.is_run_log}
                for lg in diag.logs
            ],
        },
        "gpus": [
            {
                "index": v.index,
                "uuid": v.gpu.uuid if v.gpu else None,
                "name": v.gpu.name if v.gpu else None,
                "role": v.role,
                "util": v.gpu.util if v.gpu else None,
                "mem_used_mib": v.gpu.mem_used_mib if v.gpu else None,
                "mem_total_mib": v.gpu.mem_total_mib if v.gpu else None,
                "temp_c": v.gpu.temp_c if v.gpu else None,
                "power_w": v.gpu.power_w if v.gpu else None,
                "processes": [
                    {
                        "pid": p.pid,
                        "container_pid": p.container_pid,
                        "name": p.name,
                        "used_mib": p.used_mib,
                        "owner": p.owner,
                    }
                    for p in v.processes
                ],
                "labels": list(v.codes),
            }
            for v in diag.gpus
        ],
        "findings": [f.to_json() for f in diag.findings],
    }


_SEV_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}


def render(diag: Diagnosis, host: HostConfig) -> list[Any]:
    """Rich renderables for the terminal; every dynamic string is Text, never markup."""
    run = diag.run
    head = Text(printable(f"{host.label}  run: {diag.run_state}"))
    if run:
        head.append(f"  id {run.id}  pgid {run.pgid}")
        if run.exit_code is not None:
            head.append(f"  exit {run.exit_code} ({exit_meaning(run.exit_code)})")
    ht, nt = diag.healthy("target")
    hd, nd = diag.healthy("drafter")
    head.append(f"  healthy target {ht}/{nt}, drafter {hd}/{nd}")
    gpus = Table("GPU", "role", "util", "memory", "processes", "labels", title="GPUs")
    for v in diag.gpus:
        g = v.gpu
        mem = f"{g.mem_used_mib}/{g.mem_total_mib} MiB" if g else "-"
        util = f"{g.util}%" if g and g.util is not None else "-"
        procs = ", ".join(f"{p.pid}:{p.owner}" for p in v.processes) or "-"
        gpus.add_row(str(v.index), v.role, util, mem, Text(printable(procs)), " ".join(v.codes))
    logs = Table("log", "state", title="logs")
    for lg in diag.logs:
        state = f"{lg.size} bytes" if lg.exists else "does not exist"
        if not lg.exists and lg.missing_since is not None and diag.time > lg.missing_since:
            state += f" (for {duration(diag.time - lg.missing_since)})"
        logs.add_row(Text(printable(lg.path)), state)
    found = Table("severity", "code", "message", title="findings")
    for f in diag.findings:
        found.add_row(
            Text(f.severity, style=_SEV_STYLE[f.severity]), f.code, Text(printable(f.message))
        )
    return [head, gpus, logs, found]
