"""The run root's runs under Slurm, read back from their directories (newest first): each
one's job id, exit record, launch error, start and kill request, and the command as given;
with Slurm's word on the newest one's job, or on a live one (the one-live-run rule).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.control.script import ControlError, check_root
from dflash_tui.core.control.slurm import query
from dflash_tui.core.control.slurm.batch import ROOT_SH
from dflash_tui.core.control.slurm.query import SlurmJob
from dflash_tui.core.link.slurm_node import is_job_id
from dflash_tui.core.link.transport import Transport

MAX_COMMAND = 8192  # a run's command as read back (a longer one is not requeued, but resubmitted)
MAX_RUNS_READ = 64  # the run root's latest directories asked about for the one-live-run rule
_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4,}")
_TIME = re.compile(r"\d+(\.\d+)?")


@dataclass(frozen=True)
class SlurmRun:
    """A run directory of a run under Slurm: its job id and what its files say."""

    run_id: str
    dir: str
    job_id: str | None
    exit_record: str | None = None
    launch_error: str | None = None
    started_at: float | None = None
    command: str | None = None  # as given, before the per-node wrapping (batch.node_command)
    kill_requested: float | None = None  # when our kill cancelled it (not someone else's)


# Prints, per run directory of ROOT (newest first, at most N): "run ID DIR", then its job id,
# exit record and launch error, each one line.
RUNS = (
    ROOT_SH
    + """[ -d "$r" ] || exit 0
ls -1 "$r" | grep -E '^[0-9]{{8}}-[0-9]{{6}}-[0-9a-f]{{4,}}$' | sort -r | head -n {most} |
while IFS= read -r id; do
  d=$r/$id
  [ -e "$d/slurm_job" ] || [ -e "$d/job.sbatch" ] || continue
  echo "run $id $d"
  for f in slurm_job exit launch_error started_at kill_requested slurm_command; do
    [ -r "$d/$f" ] && printf '%s %s\\n' "$f" "$(head -c {most_chars} "$d/$f" | head -n 1)"
  done
done
"""
)


async def runs(transport: Transport, host: HostConfig, most: int = MAX_RUNS_READ) -> list[SlurmRun]:
    """The run root's Slurm runs, newest first."""
    script = RUNS.format(
        root=shlex.quote(check_root(host.run_root)), most=int(most), most_chars=MAX_COMMAND
    )
    res = await transport.run(script, timeout=30)
    out: list[SlurmRun] = []
    for line in res.stdout[: query.MAX_OUTPUT].splitlines():
        key, _, rest = line.partition(" ")
        if key == "run":
            rid, _, d = rest.partition(" ")
            if _ID.fullmatch(rid):
                out.append(SlurmRun(rid, d, None))
        elif out and key == "slurm_job" and is_job_id(rest.strip()):
            out[-1] = replace(out[-1], job_id=rest.strip())
        elif out and key == "exit":
            out[-1] = replace(out[-1], exit_record=rest.strip()[:100])
        elif out and key == "launch_error":
            out[-1] = replace(out[-1], launch_error=safe_label(rest, 500))
        elif out and key == "slurm_command" and len(rest) < MAX_COMMAND:
            out[-1] = replace(out[-1], command=rest)
        elif out and key == "started_at" and _TIME.fullmatch(rest.strip()):
            out[-1] = replace(out[-1], started_at=float(rest.strip()))
        elif out and key == "kill_requested" and _TIME.fullmatch(rest.strip()):
            out[-1] = replace(out[-1], kill_requested=float(rest.strip()))
    return out


async def latest(transport: Transport, host: HostConfig) -> tuple[SlurmRun, SlurmJob] | None:
    """The newest run with its job as Slurm says now (None: no run under Slurm here)."""
    found = await runs(transport, host, 1)
    if not found:
        return None
    run = found[0]
    if run.job_id is None:
        return run, SlurmJob("", "UNKNOWN", reason=run.launch_error, source="none")
    return run, await query.job(transport, run.job_id, run.exit_record)


async def live_job(transport: Transport, host: HostConfig) -> tuple[SlurmRun, SlurmJob] | None:
    """A queued or running job of this run root, if any (the newest such)."""
    found = [r for r in await runs(transport, host) if r.job_id]
    if not found:
        return None
    res = await query.slurm(transport, ["squeue", "-h", "--me", "-o", "%i|%T"])
    if res.rc:  # unknown, never "none alive": a launch must not pass on a failed question
        why = safe_label(res.stderr.strip() or res.stdout.strip(), 300)
        raise ControlError(f"squeue cannot list this user's jobs on {transport.label}: {why}")
    live = {}
    for line in res.stdout.splitlines():
        jid, _, state = line.partition("|")
        if state.strip() in query.LIVE:
            live[jid.strip()] = state.strip()
    for run in found:
        if run.job_id in live:
            return run, await query.job(transport, str(run.job_id))
    return None
