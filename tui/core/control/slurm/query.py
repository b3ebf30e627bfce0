"""Ask Slurm about a job: squeue while it is queued or running, then sacct where the cluster
keeps accounting, else ``scontrol show job`` while slurmctld remembers it, else the exit record
the batch script wrote into the run directory. Nothing is kept that Slurm can answer.

Every command is an argv joined with ``shlex.join``; every answer is capped in size, and each
string from Slurm passes ``safe_label`` before it is kept (job names, node names and reasons
are the cluster's, and a job's name is its submitter's).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from dflash_tui.core.base.rundir import parse_exit
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.link.slurm_node import is_job_id
from dflash_tui.core.link.transport import CommandResult, Transport

MAX_OUTPUT = 64 * 1024  # one job's lines are short; a cluster's whole queue is never read
MAX_NODES = 1024
QUERY_TIMEOUT_S = 20.0
# Slurm's own states, as squeue, sacct and scontrol name them, and ours for each.
QUEUED = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD")
RUNNING = ("RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT")
# Held, its processes stopped (by an admin's scontrol suspend, gang scheduling, a STOP signal):
# not running (no step is taken, no restart is due), nor ended: it resumes where it stopped.
SUSPENDED = ("SUSPENDED", "STOPPED")
LIVE = QUEUED + RUNNING + SUSPENDED
ENDED_BY_SCHEDULER = ("NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "TIMEOUT", "BOOT_FAIL", "DEADLINE")


# What Slurm's clients say when slurmctld is not there to answer.
_DOWN = re.compile(
    r"Unable to contact slurm controller|Connection refused|Socket timed out|Zero Bytes were"
)


class SlurmUnavailable(ControlError):
    """Slurm cannot be asked: its commands are not on PATH, or slurmctld does not answer."""


@dataclass(frozen=True)
class SlurmJob:
    """What Slurm (or, once it forgot, the exit record) says about one job."""

    job_id: str
    state: str  # Slurm's own name (PENDING, RUNNING, FAILED, ...); UNKNOWN when none says
    reason: str | None = None  # why it waits (Resources, Priority, ReqNodeNotAvail, ...)
    nodes: tuple[str, ...] = ()
    time_left_s: int | None = None
    exit_code: int | None = None
    start: str | None = None  # the expected start of a pending job, when Slurm knows one
    source: str = "squeue"  # squeue | sacct | scontrol | record | none
    requeue: bool | None = None  # whether `scontrol requeue` may take it (scontrol's Requeue)
    partition: str | None = None

    @property
    def run_state(self) -> str:
        """Ours: queued, suspended, running, exited (COMPLETED, FAILED) or killed (the rest)."""
        if self.state in QUEUED:
            return "queued"
        if self.state in SUSPENDED:
            return "suspended"
        if self.state in RUNNING:
            return "running"
        if self.state in ("COMPLETED", "FAILED"):
            return "exited"
        return "unknown" if self.state == "UNKNOWN" else "killed"

    @property
    def live(self) -> bool:
        return self.state in LIVE

    def to_json(self) -> dict[str, object]:
        return {
            "kind": "slurm",
            "job_id": self.job_id,
            "state": self.state,
            "reason": self.reason,
            "nodes": list(self.nodes),
            "time_left_s": self.time_left_s,
            "exit_code": self.exit_code,
        }


def _capped(res: CommandResult) -> CommandResult:
    return CommandResult(res.rc, res.stdout[:MAX_OUTPUT], res.stderr[:MAX_OUTPUT])


async def slurm(
    transport: Transport, argv: Sequence[str], timeout: float = QUERY_TIMEOUT_S
) -> CommandResult:
    """Run one Slurm command; SlurmUnavailable when it is missing or slurmctld is down."""
    res = _capped(await transport.run(shlex.join(argv), timeout=timeout))
    err = safe_label(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "", 300)
    if res.rc == 127:
        raise SlurmUnavailable(
            f"{argv[0]} is not on PATH on {transport.label}: is this a Slurm login node? "
            "(install slurm-client, or use --scheduler direct)"
        )
    if res.rc and _DOWN.search(res.stderr):
        raise SlurmUnavailable(f"slurmctld does not answer {argv[0]} on {transport.label}: {err}")
    return res


def seconds(text: str) -> int | None:
    """Slurm's ``[D-]HH:MM:SS`` / ``MM:SS`` as seconds; None for UNLIMITED, INVALID, N/A."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if not m:
        return None
    d, h, mi, s = (int(g or 0) for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def exit_code(text: str) -> int | None:
    """``ExitCode=3:0`` -> 3; a signal (``0:9``) as a shell says it, 128 + 9."""
    m = re.fullmatch(r"(\d+):(\d+)", text.strip())
    if not m:
        return None
    code, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig and not code else code


async def hostnames(transport: Transport, nodelist: str) -> tuple[str, ...]:
    """``n[1-2],gpu7`` -> (n1, n2, gpu7), as Slurm expands it."""
    if not nodelist or nodelist in ("(null)", "None", "N/A"):
        return ()
    res = await slurm(transport, ["scontrol", "show", "hostnames", nodelist])
    if res.rc:
        return (safe_label(nodelist, 200),)
    return tuple(safe_label(n, 100) for n in res.stdout.split()[:MAX_NODES])


_SQUEUE_FORMAT = "%i|%T|%L|%S|%P|%N|%r"


async def from_squeue(transport: Transport, job_id: str) -> SlurmJob | None:
    res = await slurm(transport, ["squeue", "-h", "-t", "all", "-j", job_id, "-o", _SQUEUE_FORMAT])
    if res.rc:  # an id slurmctld no longer knows: "Invalid job id specified"
        return None
    for line in res.stdout.splitlines():
        parts = line.split("|", 6)
        if len(parts) != 7 or parts[0].strip() != job_id:
            continue
        _, state, left, start, partition, nodes, reason = (p.strip() for p in parts)
        return SlurmJob(
            job_id,
            safe_label(state, 40),
            reason=safe_label(reason, 200) if reason and reason != "None" else None,
            nodes=await hostnames(transport, nodes),
            time_left_s=seconds(left),
            start=safe_label(start, 40) if re.match(r"\d{4}-", start) else None,
            partition=safe_label(partition, 100) or None,
        )
    return None


async def from_sacct(transport: Transport, job_id: str) -> SlurmJob | None:
    argv = ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList"]
    res = await slurm(transport, argv)
    if res.rc:  # "Slurm accounting storage is disabled": a cluster without slurmdbd
        return None
    for line in res.stdout.splitlines():
        parts = line.split("|")
        if len(parts) == 4 and parts[0] == job_id:
            # "CANCELLED by 0": the state's first word
            state = safe_label(parts[1].split(" ")[0], 40)
            nodes = await hostnames(transport, parts[3])
            return SlurmJob(
                job_id, state, nodes=nodes, exit_code=exit_code(parts[2]), source="sacct"
            )
    return None


def fields(text: str) -> dict[str, str]:
    """``scontrol -o show job``'s Key=Value words (values up to the next space)."""
    return dict(re.findall(r"(?:^|\s)([A-Za-z][A-Za-z/:]*)=(\S*)", text))


async def from_scontrol(transport: Transport, job_id: str) -> SlurmJob | None:
    res = await slurm(transport, ["scontrol", "-o", "show", "job", job_id])
    if res.rc:
        return None
    f = fields(res.stdout.splitlines()[0] if res.stdout else "")
    if f.get("JobId") != job_id:
        return None
    reason = f.get("Reason", "None")
    return SlurmJob(
        job_id,
        safe_label(f.get("JobState", "UNKNOWN"), 40),
        reason=safe_label(reason, 200) if reason != "None" else None,
        nodes=await hostnames(transport, f.get("NodeList", "")),
        exit_code=exit_code(f.get("ExitCode", "")),
        source="scontrol",
        requeue=f.get("Requeue") == "1" if "Requeue" in f else None,
    )


def from_record(job_id: str, record: str | None) -> SlurmJob:
    """The exit record the batch script wrote (``exit``: "CODE TIME"), once Slurm forgot;
    read by rundir.parse_exit, the one reader of it: a malformed record is an unknown end."""
    code, _ = parse_exit(record)
    if code is None:
        return SlurmJob(job_id, "UNKNOWN", source="none")
    return SlurmJob(job_id, "COMPLETED" if code == 0 else "FAILED", exit_code=code, source="record")


async def job(transport: Transport, job_id: str, exit_record: str | None = None) -> SlurmJob:
    """The job as Slurm says now (squeue, then sacct, then scontrol), else its exit record."""
    if not is_job_id(job_id):
        raise ControlError(f"not a Slurm job id: {safe_label(job_id, 40)!r}")
    queued = await from_squeue(transport, job_id)
    if queued is not None and queued.live:
        return queued
    ended = await from_sacct(transport, job_id) or await from_scontrol(transport, job_id)
    if ended is not None:
        return ended
    if queued is not None:
        return queued
    return from_record(job_id, exit_record)


async def node_states(transport: Transport, j: SlurmJob) -> dict[str, tuple[str, str | None]]:
    """Each node the job holds, or its partition's while it waits: its state as sinfo says it
    (idle, allocated, drained, down, ...; lowercase) and the reason an admin gave, if any."""
    if j.nodes:
        where = ["-n", ",".join(j.nodes)]
    elif j.partition and j.live:
        where = ["-p", j.partition]
    else:
        return {}
    res = await slurm(transport, ["sinfo", "-h", "-N", *where, "-o", "%N|%T|%E"])
    out: dict[str, tuple[str, str | None]] = {}
    for line in res.stdout.splitlines()[:MAX_NODES]:
        name, _, rest = line.partition("|")
        state, _, reason = rest.partition("|")
        if name.strip():
            why = reason.strip() if reason.strip() not in ("", "none") else None
            out[safe_label(name.strip(), 100)] = (
                safe_label(state.strip().lower(), 40),
                safe_label(why, 200) if why else None,
            )
    return out
