"""The readable table of ``dflash-tui status``: a Diagnosis as Rich renderables."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import exit_text
from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.base.text import mib_pair, printable
from dflash_tui.core.control.supervisor_state import alive_here
from dflash_tui.core.diagnosis.document import iso_time
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.host_view import machine_line, worker_views, workers_line
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.views import Diagnosis

_SEV_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}


def _t(text: object, style: str = "") -> Text:
    """A cell or line: every string a host, a record or a job sent is made printable here."""
    return Text(printable(str(text)), style=style)


def _head(diag: Diagnosis, host: HostConfig) -> str:
    run = diag.run
    head = f"{host.label}  run: {diag.run_state}"
    if run:
        head += f"  id {run.id}  pgid {run.pgid}"
        if run.exit_code is not None:
            head += f"  {exit_text(run.exit_code)}"
    target, drafter = diag.health_text("target"), diag.health_text("drafter")
    return head + f"  healthy target {target}, drafter {drafter}"


def render(diag: Diagnosis, host: HostConfig, progress: Progress | None = None) -> list[Any]:
    """Rich renderables for the terminal; every dynamic string is Text, never markup."""
    gpus = Table("GPU", "role", "util", "memory", "processes", "labels", title="GPUs")
    for v in diag.gpus:
        g = v.gpu
        mem = mib_pair(g.mem_used_mib, g.mem_total_mib) if g else "-"
        util = f"{g.util}%" if g and g.util is not None else "-"
        procs = ", ".join(f"{p.pid}:{p.owner}" for p in v.processes) or "-"
        gpus.add_row(*(_t(x) for x in (v.index, v.role, util, mem, procs, " ".join(v.codes))))
    logs = Table("log", "state", title="logs")
    for lg in diag.logs:
        state = f"{lg.size} bytes" if lg.exists else "does not exist"
        if not lg.exists and lg.missing_since is not None and diag.time > lg.missing_since:
            bound = "at least " if lg.missing_at_least else ""
            state += f" (for {bound}{duration(diag.time - lg.missing_since)})"
        logs.add_row(_t(lg.path), _t(state))
    found = Table("severity", "code", "message", title="findings")
    for f in diag.findings:
        found.add_row(_t(f.severity, _SEV_STYLE.get(f.severity, "")), _t(f.code), _t(f.message))
    th = diag.thresholds
    lines = [_head(diag, host), supervisor_line(diag.supervisor, diag.time)]
    lines.append(machine_line(diag.machine, th))
    if diag.workers:
        lines.append(workers_line(worker_views(diag.workers, diag.time, th, progress)))
    return [*(_t(x) for x in lines), gpus, logs, found]


def supervisor_line(sup: SupervisorRecord | None, now: float) -> str:
    """``supervisor: PID 4242 on gpu-a since ..., fresh (...), 2 restarts, auto-restart on (3
    retries)``; a supervisor that gave up says ``FATAL: gave up after ...`` instead, and one
    whose heartbeat is old but whose process runs (it cannot write) is not called stale."""
    if sup is None:
        return "supervisor: none (no supervisor.json in the run root)"
    age = sup.age(now)
    beat = f"heartbeat {duration(age)} ago" if age is not None else "no heartbeat"
    if sup.live(now):
        state = f"fresh ({beat})"
    elif sup.stopped_at is not None:
        state = f"stopped at {iso_time(sup.stopped_at)}"
    elif sup.mode != "daemon":
        state = f"{sup.mode} ({beat})"
    elif runs_here(sup):
        state = f"RUNNING but not writing its record ({beat})"
    else:
        state = f"STALE ({beat})"
    return (
        f"supervisor: PID {sup.pid} on {sup.host or '?'} since {iso_time(sup.started_at) or '?'}, "
        f"{state}, {sup.summary()}"
    )


def runs_here(sup: SupervisorRecord) -> bool:
    """The recorded supervisor is a live process of this machine (by PID and start time)."""
    if sup.start_ticks is None:
        return False
    return alive_here(sup.host, sup.pid, sup.start_ticks) is True
