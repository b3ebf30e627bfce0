"""The run directory: file names and the pure rules that read a run's state back.

The layout is in docs/internals.md. Reading happens in the probe (where the run lives); these
functions judge what the probe read, so local, SSH and container runs share one rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.core.snapshot import Proc, RunRecord

RUN_STATES = ("none", "starting", "running", "exited", "killed", "launch-failed")
DEFAULT_START_WINDOW = 3.0  # seconds a job must stay up to count as started (supervisord startsecs)


def group_members(run: RunRecord | None, procs: Sequence[Proc]) -> list[Proc]:
    """Live (non-zombie) processes of the run's process group.

    A PGID is reused by the kernel once the group is gone: when the recorded leader is still
    present its start time must match, else nothing of that group is ours.
    """
    if run is None or run.pgid is None:
        return []
    members = [p for p in procs if p.pgid == run.pgid and p.state != "Z"]
    leader = next((p for p in members if p.pid == run.pgid), None)
    if (
        leader is not None
        and run.start_ticks is not None
        and leader.start_ticks is not None
        and leader.start_ticks != run.start_ticks
    ):
        return []
    return members


def run_state(
    run: RunRecord | None,
    procs: Sequence[Proc],
    now: float,
    start_window: float = DEFAULT_START_WINDOW,
) -> str:
    if run is None:
        return "none"
    if run.launch_error:
        return "launch-failed"
    if group_members(run, procs):
        if run.started_at is not None and now - run.started_at < start_window:
            return "starting"
        return "running"
    if run.exit_code is None:
        # Never recorded a start, or the group vanished with no exit code: something killed it.
        return "launch-failed" if run.pgid is None else "killed"
    quick = (
        run.started_at is not None
        and run.ended_at is not None
        and run.ended_at - run.started_at < start_window
    )
    if run.exit_code != 0 and quick and run.kill_requested_at is None:
        return "launch-failed"
    return "killed" if run.exit_code >= 128 else "exited"


SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def exit_meaning(code: int | None) -> str:
    """What an exit code usually means, for people reading a crash."""
    if code is None:
        return "no exit code recorded: the process group vanished (killed)"
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
