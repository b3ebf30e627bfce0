"""The run directory: file names and the pure rules that read a run's state back.

The layout is in docs/internals.md. Reading happens where the run lives (the probe, or
tui/core/control/control.sh for control); these functions judge what was read, so local, SSH
and container runs share one rule. The auto-restart decisions are tui/core/control/policy.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from dflash_tui.core.base.snapshot import Proc, RunRecord
from dflash_tui.core.base.timings import LAUNCH_SETUP_S, START_WINDOW_S

# `queued`: a run under Slurm whose job waits for its nodes; `suspended`: one whose job Slurm
# holds stopped (SUSPENDED, STOPPED): its processes take no step, nor has it ended
# (tui/core/control/slurm/). Neither is alive, nor ended: a restart waits for its end.
RUN_STATES = (
    "none", "queued", "suspended", "starting", "running", "exited", "killed", "launch-failed",
)  # fmt: skip
ALIVE_STATES = ("starting", "running")
ENDED_STATES = ("exited", "killed", "launch-failed")  # a run's end: what a restart follows


def group_members(
    run: RunRecord | None,
    procs: Sequence[Proc],
    found: tuple[Sequence[Proc], Proc | None] | None = None,
) -> list[Proc]:
    """Live (non-zombie) processes of the run's process group. ``found``: the processes of
    ``procs`` whose group is the run's, in order, and the first whose PID is its PGID, where
    the caller has them (``Snapshot.group_of``); else ``procs`` is scanned for them.

    A PGID is reused by the kernel once the group is gone: when the recorded leader is still
    present its start time must match, else nothing of that group is ours. When the leader is
    gone, the members must be in the run's session (the launcher's setsid made SID == PGID) and
    born after the leader; one that is not proves the group is someone else's.
    """
    if run is None or run.pgid is None:
        return []
    group = run.pgid  # a local: every sample of every host scans a whole table here
    if found is None:
        found = (
            [p for p in procs if p.pgid == group],
            next((p for p in procs if p.pid == group), None),
        )
    members = [p for p in found[0] if p.state != "Z"]
    leader = found[1]
    if leader is not None:
        if (
            run.start_ticks is not None
            and leader.start_ticks is not None
            and leader.start_ticks != run.start_ticks
        ):
            return []
        return members
    for p in members:
        born_before = (
            run.start_ticks is not None
            and p.start_ticks is not None
            and p.start_ticks < run.start_ticks
        )
        if p.sid != run.pgid or born_before:
            return []
    return members


def run_state(
    run: RunRecord | None,
    procs: Sequence[Proc],
    now: float,
    start_window: float = START_WINDOW_S,
) -> str:
    return state_of(run, bool(group_members(run, procs)), now, start_window)


def state_of(
    run: RunRecord | None, alive: bool, now: float, start_window: float = START_WINDOW_S
) -> str:
    """``run_state`` for a caller that knows whether the run's group has live members."""
    if run is None:
        return "none"
    if run.launch_error and not alive:  # a job alive despite a reported failure is running
        return "launch-failed"
    if alive:
        if run.started_at is not None and now - run.started_at < start_window:
            return "starting"
        return "running"
    if run.exit_code is None:
        # No pid file yet: the launcher is still setting the job up (it writes launch_error
        # itself if the job never starts). A recorded group gone with no exit code was killed.
        # The wrapper writes pid before started_at, so a start time without a readable pid
        # file is a broken record, not a start in progress (it would say "starting" forever).
        if run.pgid is None:
            if run.started_at is not None or abandoned(run, now, start_window):
                return "launch-failed"
            return "starting"
        return "killed"
    quick = (
        run.started_at is not None
        and run.ended_at is not None
        and run.ended_at - run.started_at < start_window
    )
    if run.exit_code != 0 and quick and run.kill_requested_at is None:
        return "launch-failed"
    return "killed" if run.exit_code >= 128 else "exited"


ABANDONED = "abandoned: the launcher stopped before the job had a pid file"


def abandoned(run: RunRecord, now: float, start_window: float = START_WINDOW_S) -> bool:
    """A run directory without a pid file that no launcher works on any more, past its window.

    (A SIGKILLed launcher leaves one behind; it would read ``starting`` for ever.) ``launcher``
    is the live launcher's PID, 0 when control.sh saw none, None when unknown (the probe).
    """
    if run.pgid is not None or run.launch_error or run.born is None or run.launcher:
        return False
    wait = start_window if run.launcher == 0 else start_window + LAUNCH_SETUP_S
    return now - run.born > wait


SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def exit_meaning(code: int | None) -> str:
    """What an exit code usually means, for people reading a crash."""
    if code is None:
        return "the process group vanished (killed)"
    if code == 0:
        return "success"
    if code == 137:
        return "SIGKILL (often the kernel's OOM killer, or a kill -9)"
    if code >= 128:
        sig = code - 128
        return f"killed by signal {sig} ({SIGNALS.get(sig, 'signal')})"
    if code == 127:
        return "command not found"
    if code == 126:
        return "command not executable"
    if code == 1:
        return "error (see the log's last lines)"
    return f"exited with status {code}"


def exit_text(code: int | None) -> str:
    """``exit 3: exited with status 3``, or with no exit code ``exit code unknown: the process
    group vanished (killed)`` (never ``exit None`` or ``exit ?``): the one wording of an exit
    for findings, alerts, the timeline and the supervisor."""
    if code is None:
        return f"exit code unknown: {exit_meaning(code)}"
    return f"exit {code}: {exit_meaning(code)}"


# ---- what tui/core/control/control.sh prints: `key value` lines -----------------------------


@dataclass(frozen=True)
class RunReport:
    """One reading of a run directory by control.sh, plus what the verb did."""

    now: float | None = None  # the clock of the machine where the run lives
    record: RunRecord | None = None
    verdict: str = "none"  # none | gone | ours | reused (is the recorded PGID still the run's?)
    members: tuple[Proc, ...] = ()
    log_tail: tuple[str, ...] = ()
    launched: str | None = None
    alive: str | None = None  # launch refused: this run is alive
    pruned: tuple[str, ...] = ()
    signalled: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    facts: dict[str, str] = field(default_factory=dict)  # cleared/absent (compile cache)
    # The job's processes outside its group and marker (its cgroup's, or its members' children)
    others: tuple[Proc, ...] = ()
    cgroup: str | None = None  # the run's own cgroup, where the host gave it one
    kill_pending: int | None = None  # a kill left for this launcher (it held the lock)
    notes: tuple[str, ...] = ()
    ended: bool = False  # the answer's `end` line: control.sh ran to its end

    def state(self, start_window: float = START_WINDOW_S) -> str:
        now = self.now if self.now is not None else 0.0
        return run_state(self.record, self.members, now, start_window)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def parse_exit(text: str | None) -> tuple[int | None, float | None]:
    """The exit record a run or a batch script wrote (``CODE TIME``) as (code, end time): a
    file on the run's machine, so each part that is malformed (or a time that is not finite)
    is unknown, never an error."""
    parts = (text or "").split()
    code = _int(parts, 0)
    ended = _float(parts[1]) if len(parts) > 1 else None
    return code, ended if ended is not None and math.isfinite(ended) else None


_INT_DIGITS = 18  # more is no PID, PGID or exit code (and int() refuses past 4300 digits)


def _int(parts: list[str], i: int) -> int | None:
    text = parts[i] if len(parts) > i else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= _INT_DIGITS else None


def _member(text: str) -> Proc | None:
    parts = text.split(" ", 6)
    if len(parts) < 6 or not all(x.isdigit() for x in parts[:4] + parts[5:6]):
        return None
    pid, ppid, pgid, sid, ticks = (int(x) for x in (*parts[:4], parts[5]))
    comm = parts[6] if len(parts) > 6 else ""
    return Proc(pid, ppid, pgid, sid, parts[4], ticks, None, None, "", comm)


def _record(
    rid: str | None, rdir: str | None, files: dict[str, str], err: list[str], vals: dict[str, str]
) -> RunRecord:
    pid = files.get("pid", "").split()
    exit_code, ended_at = parse_exit(files.get("exit"))
    rdir = rdir or ""
    return RunRecord(
        id=rid or rdir.rsplit("/", 1)[-1],
        dir=rdir,
        command=files.get("command"),
        pid=_int(pid, 0),
        pgid=_int(pid, 1),
        start_ticks=_int(pid, 2),
        started_at=_float(files.get("started_at")),
        exit_code=exit_code,
        ended_at=ended_at,
        launch_error="\n".join(err) if err else None,
        kill_requested_at=_float(files.get("kill_requested")),
        born=_float(vals.get("born")),
        launcher=_int(vals.get("launcher", "").split(), 0),
        log_path=f"{rdir}/output.log",
        events_path=f"{rdir}/events.jsonl",
    )


_VALUES = (
    "now", "id", "dir", "verdict", "launched", "alive", "cleared", "absent", "born", "launcher",
    "kill_pending", "cgroup", "end",
)  # fmt: skip


def parse_report(text: str) -> RunReport:
    """Parse control.sh's output; unknown or malformed lines are ignored."""
    vals: dict[str, str] = {}
    files: dict[str, str] = {}
    lists: dict[str, list[str]] = {
        k: [] for k in ("launch_error", "log", "pruned", "error", "note")
    }
    signalled: list[str] = []
    procs: dict[str, list[Proc]] = {"member": [], "other": []}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "file":
            name, _, value = rest.partition(" ")
            files[name] = value
        elif key in procs:
            m = _member(rest)
            if m is not None:
                procs[key].append(m)
        elif key in lists:
            lists[key].append(rest)
        elif key == "signal_error":
            lists["error"].append(f"kill: {rest}")
        elif key == "signalled":
            signalled.append(rest.split(" ")[0])
        elif key in _VALUES:
            vals[key] = rest
    record = None
    if "dir" in vals:
        record = _record(vals.get("id"), vals["dir"], files, lists["launch_error"], vals)
    pending = vals.get("kill_pending", "")
    return RunReport(
        now=_float(vals.get("now")),
        record=record,
        verdict=vals.get("verdict", "none"),
        members=tuple(procs["member"]),
        others=tuple(procs["other"]),
        cgroup=vals.get("cgroup"),
        kill_pending=int(pending) if pending.isdigit() else None,
        notes=tuple(lists["note"]),
        ended="end" in vals,
        log_tail=tuple(lists["log"]),
        launched=vals.get("launched"),
        alive=vals.get("alive"),
        pruned=tuple(lists["pruned"]),
        signalled=tuple(signalled),
        errors=tuple(lists["error"]),
        facts={k: vals[k] for k in ("cleared", "absent") if k in vals},
    )
