"""Control actions as values: each is built once, when its key is pressed and the host has
answered what it would signal; its confirm dialog shows that value, and ``y`` sends exactly
that value. A sample that arrives in between (another run, no run) changes neither."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from dflash_tui.app.host.procs.tree import ProcInfo
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.views import Diagnosis

PIDS_SHOWN = 12  # a dialog lists this many PIDs, then "... and N more"


@dataclass(frozen=True)
class LaunchRequest:
    """Launch the host's command as a new run."""

    host: str


@dataclass(frozen=True)
class KillRequest:
    """Kill run ``run_id``: SIGTERM its group, SIGKILL after ``grace``. ``members`` are the
    processes the host said the kill signals (or, with ``note`` saying why, the sample's)."""

    host: str
    run_id: str
    pgid: int | None
    members: tuple[Proc, ...]
    gpus: tuple[int, ...]
    grace: float
    note: str | None = None

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(p.pid for p in self.members)


@dataclass(frozen=True)
class RestartRequest:
    """Restart run ``run_id`` (kill it, wait for its GPUs, launch ``command``). ``run_id``
    None: the host had no run at all, and control launches only while it still has none.
    ``kill`` is what stopping the run signals; None while no run is alive."""

    host: str
    run_id: str | None
    kill: KillRequest | None
    command: str


@dataclass(frozen=True)
class JobKillRequest:
    """Cancel Slurm job ``job_id`` of run ``run_id`` (scancel), KILL after ``grace`` seconds
    if it still lives; ``text`` is what the confirm said it does (tui/app/control/slurm.py)."""

    host: str
    run_id: str
    job_id: str
    grace: float
    text: str


DUMP = "py-spy"  # a ProcessRequest's "signal" that is a py-spy dump, not a signal


@dataclass(frozen=True)
class ProcessRequest:
    """``K``: send ``signal`` (TERM, INT, KILL, USR1, or ``DUMP``) to each of ``procs``, each
    checked against its start time right before (tui/core/control/pid.py)."""

    host: str
    procs: tuple[ProcInfo, ...]
    signal: str

    @property
    def pids_text(self) -> str:
        """The first PIDs, as the dialog's title and the wait bar name them."""
        more = ", …" if len(self.procs) > 8 else ""
        return ", ".join(str(i.pid) for i in self.procs[:8]) + more


ControlRequest = LaunchRequest | KillRequest | RestartRequest | ProcessRequest | JobKillRequest


def kill_request(
    host: str,
    snap: Snapshot,
    diag: Diagnosis,
    grace: float,
    targets: Sequence[Proc] | None = None,
    note: str | None = None,
) -> KillRequest:
    """The kill of ``diag``'s run. ``targets`` is control.sh's own list (the group and the
    processes that left it, by the run's marker); without it the sample's group members."""
    run = diag.run
    assert run is not None
    members = tuple(targets) if targets is not None else tuple(group_members(run, snap.procs))
    pids = {p.pid for p in members}
    gpus = tuple(
        sorted(
            v.index
            for v in diag.gpus
            if any((p.container_pid or p.pid) in pids or p.owner == "run" for p in v.processes)
        )
    )
    return KillRequest(host, run.id, run.pgid, members, gpus, grace, note)


def kill_text(req: KillRequest) -> Text:
    """What the kill signals: its group, each member, and the GPUs they hold."""
    t = Text()
    t.append(f"SIGTERM to process group {req.pgid} (run {req.run_id}), then SIGKILL after ")
    t.append(f"{req.grace:.0f}s if it is still alive.\n", style="bold")
    t.append("The group is checked against the run's recorded start time first.\n\n")
    t.append(f"PIDs ({len(req.members)}):\n", style="bold")
    for p in req.members[:PIDS_SHOWN]:
        left = "  (left the group: signalled by PID)" if p.pgid != req.pgid else ""
        t.append(f"  {p.pid:>7}  {p.state}  {safe_label(p.cmd, 60)}{left}\n")  # one line each
    if len(req.members) > PIDS_SHOWN:
        t.append(f"  … and {len(req.members) - PIDS_SHOWN} more\n")
    t.append("GPUs held: ", style="bold")
    t.append(", ".join(f"GPU {g}" for g in req.gpus) if req.gpus else "none", style="bold")
    t.append("\n")
    if req.note:
        t.append(f"Note: {req.note}\n", style="italic")
    return t


def restart_text(req: RestartRequest) -> Text:
    body = Text()
    if req.kill is not None:
        body = kill_text(req.kill)
        body.append("\nThen wait until its GPU memory is released, and launch again:\n")
    else:
        body.append("No live run: this launches a new one:\n")
    body.append(f"  {safe_label(req.command, 300)}\n", style="bold")
    body.append("A new run id and log file are created; the old log is kept.")
    return body
