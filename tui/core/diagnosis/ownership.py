"""Who a GPU process belongs to (pure): the current run, an earlier one, nobody we know of
(an orphan), someone else (foreign), or unknown (not visible where the probe runs).

The rules are DESIGN.md's owners; docs/internals.md says them in words. PGIDs are reused by
the kernel, so group membership is always checked against the leader's start ticks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import GpuProcess, Proc, RunRecord, Snapshot

# The init PID namespace's PID 1 is forked while the kernel boots, well within this many
# seconds; a container's init starts once the host's userspace is up, later.
INIT_AT_BOOT_S = 5.0

# What makes a GPU process an orphan, strongest first:
#   group     - in an ended run's process group or session, born after that run's leader
#   born-in-run - reparented to init, born while the (now ended) current run was alive
#   init      - reparented to init, nothing ties it to a run of ours
#   vanished  - its PID is not in the host's process table: what is left of a process that
#               ended, still counted by the driver
ORPHAN_EVIDENCE = ("group", "born-in-run", "init", "vanished")
ATTRIBUTED = frozenset({"group", "born-in-run"})

T = TypeVar("T")


def judge(gp: GpuProcess, snap: Snapshot) -> tuple[str, str, str]:
    """(owner, evidence, left_by) of a GPU process; evidence and left_by only for orphans."""
    pid = gp.container_pid if gp.container_pid is not None else gp.pid
    proc = snap.proc(pid)
    if proc is None:
        if gp.container_pid is None and _vanished_means_gone(snap):
            return "orphan", "vanished", ""
        return "unknown", "", ""  # not visible where the probe runs (a container sees no host PIDs)
    run = snap.run
    if run is not None and run.pgid is not None:
        # Once the wrapper recorded an exit, whatever is left of the group is a leftover.
        ended = run.exit_code is not None
        live = set() if ended else live_members(snap)
        if live and (proc.pid in live or proc.sid == run.pgid or _descends(proc.pid, run, snap)):
            return "run", "", ""
        if ended and _left_by(proc, run.pgid, run.start_ticks, snap):
            return "orphan", "group", f"run {run.id}"  # a dead current run's leftover
        for g, t in _earlier(run):
            if _left_by(proc, g, t, snap):
                return "orphan", "group", f"an earlier run (process group {g})"
    if proc.ppid == 1:
        if run is not None and _born_in_ended_run(proc, run, snap):
            return "orphan", "born-in-run", f"run {run.id}"
        return "orphan", "init", ""
    return "foreign", "", ""


def run_alive(snap: Snapshot) -> bool:
    """Is a run of ours alive (or still being set up) in this sample?"""
    run = snap.run
    if run is None or run.exit_code is not None:
        return False
    if run.pgid is None:  # no pid file yet: the launcher may still be starting it
        return run.started_at is None and not run.launch_error
    return bool(live_members(snap))


def _sees_host_pids(snap: Snapshot) -> bool:
    """Is the probe's process table the PID namespace the driver reports PIDs in (the host's)?

    Only on evidence: PID 1 is in the table and started as the kernel booted (a container's
    init starts later); nothing but PID 1 has parent 0 (``pct exec``, ``docker exec`` and
    ``nsenter`` leave their processes with a parent outside the namespace); no GPU process was
    mapped from the host side (that happens only in a container); /proc was fully readable.
    """
    return _memo(snap, "_sees_host", lambda: _table_is_hosts(snap))


def _table_is_hosts(snap: Snapshot) -> bool:
    init = snap.proc(1)
    return (
        init is not None
        and init.start_ticks is not None
        and init.start_ticks <= INIT_AT_BOOT_S * snap.clk_tck
        and not any(p.ppid == 0 and p.pid != 1 for p in snap.procs)
        and all(gp.container_pid is None for gp in snap.gpu_procs)
        and not any(e.startswith(("unreadable /proc", "cannot list")) for e in snap.errors)
    )


def _vanished_means_gone(snap: Snapshot) -> bool:
    """May a GPU PID absent from the table be called gone (a leftover), not just unseen?

    Only where the table is the host's. While a run of ours is alive that is still not enough
    (its own processes, seen through a namespace the evidence missed, would be called
    orphans) unless another GPU PID of this sample resolves here, proving the driver's PIDs
    are this table's.
    """
    if not _sees_host_pids(snap):
        return False
    if not run_alive(snap):
        return True
    return any(gp.container_pid is None and snap.proc(gp.pid) for gp in snap.gpu_procs)


def _born_in_ended_run(proc: Proc, run: RunRecord, snap: Snapshot) -> bool:
    """Was ``proc`` born while the current run, now ended, was alive (after its leader
    started and, where the clock allows the comparison, before it ended)? A worker that left
    the run's group (setsid) and outlived it looks like that; a job started before the run,
    or after it ended, does not."""
    if run.pgid is None or run_alive(snap):
        return False
    if run.start_ticks is None or proc.start_ticks is None or proc.start_ticks < run.start_ticks:
        return False
    end = run.ended_at if run.ended_at is not None else run.kill_requested_at
    if end is None or snap.boot_time is None or snap.clk_tck <= 0:
        return True
    return snap.boot_time + proc.start_ticks / snap.clk_tck <= end + 1.0  # whole-second clocks


def _earlier(run: RunRecord) -> tuple[tuple[int, int | None], ...]:
    return run.earlier_runs or tuple((g, None) for g in run.earlier_pgids)


def _left_by(proc: Proc, pgid: int, ticks: int | None, snap: Snapshot) -> bool:
    """Is ``proc`` what is left of a run whose group was ``pgid``, led by a process started at
    ``ticks``? The kernel reuses PGID numbers: a group whose leader started at another time,
    or a process older than that run, belongs to someone else."""
    if pgid not in (proc.pgid, proc.sid):
        return False
    if ticks is None or proc.start_ticks is None:
        return True
    leader = snap.proc(pgid)
    if leader is not None and leader.start_ticks is not None and leader.start_ticks != ticks:
        return False
    return proc.start_ticks >= ticks


def live_members(snap: Snapshot) -> set[int]:
    """PIDs of the run's group, once per snapshot (its run state reads them too)."""
    return _memo(snap, "_run_members", lambda: {p.pid for p in _group_members(snap)})


def _group_members(snap: Snapshot) -> list[Proc]:
    run = snap.run  # its group as the table was parsed (Snapshot.group_of), not a scan
    found = snap.group_of(run.pgid) if run is not None and run.pgid is not None else None
    return group_members(run, snap.procs, found)


def _memo(snap: Snapshot, key: str, make: Callable[[], T]) -> T:
    """``make()``, computed once per snapshot and kept on the frozen snapshot itself (as
    functools.cached_property does), so every GPU process of a sample shares it."""
    if key not in snap.__dict__:
        snap.__dict__[key] = make()
    return snap.__dict__[key]


def _descends(pid: int, run: RunRecord, snap: Snapshot) -> bool:
    parents = snap.parents
    seen = 0
    while pid in parents and seen < 512:
        if pid == run.pgid:
            return True
        pid, seen = parents[pid], seen + 1
    return False
