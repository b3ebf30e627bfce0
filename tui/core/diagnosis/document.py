"""The status document (schema 1, DESIGN.md): a Diagnosis as JSON (pure; the table that the
command line prints is tui/cli/table.py)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import exit_meaning
from dflash_tui.core.base.times import utc_iso
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.views import Diagnosis

SCHEMA = 1


def iso_time(t: float | None) -> str | None:
    if t is None:
        return None
    return utc_iso(t)


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def progress_json(
    diag: Diagnosis, progress: Progress | None = None, log_mtime: float | None = None
) -> dict[str, Any] | None:
    """Step, loss, tok/s and seconds since the last step: from the run's event stream when it
    writes one, else from its log (where a single sample dates the step by the log's mtime:
    the step line was written then or earlier). A nan or inf loss reads as null with
    ``loss_finite`` false (JSON has no nan). None: no step seen."""
    ev = diag.last_step
    if ev is not None and ev.step is not None:
        src, step, loss, acc, tok_s, at = "events", ev.step, ev.loss, ev.acc, ev.tok_s, ev.time
    elif progress is not None and progress.last_step is not None:
        last = progress.last
        src, step, at = "log", progress.last_step, progress.last_step_at
        loss, acc, tok_s = (last.loss, last.acc, last.tok_s) if last else (None, None, None)
        if log_mtime is not None and at is not None:
            at = min(at, log_mtime)
    else:
        return None
    return {
        "source": src,
        "step": step,
        "loss": _finite(loss),
        "loss_finite": loss is None or math.isfinite(loss),
        "acc": _finite(acc),
        "tok_s": _finite(tok_s),
        "last_step_at": iso_time(at),
        "last_step_age_s": round(max(diag.time - at, 0.0), 1) if at is not None else None,
    }


def to_json(
    diag: Diagnosis,
    host: HostConfig,
    progress: Progress | None = None,
    log_mtime: float | None = None,
) -> dict[str, Any]:
    """The document; ``progress`` and ``log_mtime`` (the run log's) feed its ``progress``."""
    run = diag.run
    sup = diag.supervisor
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
        "supervisor": sup.to_status(diag.time) if sup is not None else None,
        "scheduler": None,  # a run under Slurm: its job (tui/core/control/slurm/findings.py)
        "progress": progress_json(diag, progress, log_mtime),
        "machine": machine_json(diag),
    }


def machine_json(diag: Diagnosis) -> dict[str, Any] | None:
    """The host around the GPUs (docs/internals.md, "Host health"); None: not read."""
    m = diag.machine
    if m is None:
        return None
    ck = m.checkpoint
    return {
        "mem_total_kb": m.mem_total_kb,
        "mem_available_kb": m.mem_available_kb,
        "swap_total_kb": m.swap_total_kb,
        "swap_free_kb": m.swap_free_kb,
        "oom_kill": m.oom_kill,
        "disks": [dataclasses.asdict(d) for d in m.disks],
        "checkpoint": dataclasses.asdict(ck) if ck is not None else None,
        "checkpoint_age_s": round(diag.time - ck.mtime, 1) if ck and ck.mtime else None,
        "kernel_log": m.kernel_source,
        "kernel_log_error": m.kernel_error,
        "xid_watch": m.xid_watch,
        "gpu_health": [dataclasses.asdict(h) for h in m.gpu_health],
        "workers": [dataclasses.asdict(w) for w in diag.workers],
    }
