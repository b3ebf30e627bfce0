"""The status document (schema 1, DESIGN.md): a Diagnosis as JSON (pure; the table that the
command line prints is tui/cli/table.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from dflash_tui.core.base.config import HostConfig
from dflash_tui.core.base.rundir import exit_meaning
from dflash_tui.core.diagnosis.diagnose import Diagnosis

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
