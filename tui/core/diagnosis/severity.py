"""How bad each thing is: the one home for a finding's severities and their order, a GPU
label's severity, a run state's and a process owner's (pure). The app maps these levels to
colours and nothing else (tui/app/widgets/palette.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.rundir import SIGNALS
from dflash_tui.core.base.snapshot import RunRecord

SEVERITIES = ("info", "warning", "error")  # a finding's severity, mildest first
LEVELS = ("ok", *SEVERITIES)  # what a reading shows as: "ok" is healthy, below every finding

_LABEL: dict[str, Callable[[bool], str]] = {
    "ok": lambda active: "ok",
    "idle": lambda active: "warning" if active else "info",  # idle while the run is alive
    "busy-no-memory": lambda active: "warning",
    "orphan-process": lambda active: "error",
    "foreign-process": lambda active: "warning",
    "unexpected-activity": lambda active: "warning",
    "near-oom": lambda active: "warning",
    "ecc-errors": lambda active: "error",
    "throttled": lambda active: "warning",
    "missing": lambda active: "error",
}
assert tuple(_LABEL) == GPU_LABELS, "a label without a severity, or out of order"

RUN_STATE = {
    "none": "info",
    "unknown": "info",
    "queued": "info",  # a Slurm job waiting for its nodes
    "suspended": "warning",  # a Slurm job held with its processes stopped
    "starting": "warning",
    "running": "ok",
    "exited": "info",
    "killed": "warning",
    "launch-failed": "error",
    "broken": "error",  # a job with members alive and members not (diagnosis/job.py)
    "ended": "info",  # a job whose members ended in different states
}


def run_chip(state: str, run: RunRecord | None) -> tuple[str, str]:
    """The run state as a screen shows it, and its severity. The state names stay the
    contract's; only a ``killed`` run that nobody asked to stop reads otherwise: named by its
    signal (``SIGKILL``: often the OOM killer) or ``VANISHED`` (no exit code), an error."""
    if state != "killed" or run is None or run.kill_requested_at is not None:
        return state.upper(), RUN_STATE.get(state, "info")
    code = run.exit_code
    if code is None:
        return "VANISHED", "error"
    return SIGNALS.get(code - 128, f"SIGNAL {code - 128}"), "error"


OWNER = {"run": "ok", "orphan": "error", "foreign": "warning", "unknown": "info"}


def label_severity(code: str, run_active: bool) -> str:
    """A GPU label's level; an unknown label is a warning (never silently healthy)."""
    rule = _LABEL.get(code)
    return rule(run_active) if rule else "warning"


def rank(level: str) -> int:
    """Order of a level: ok < info < warning < error (an unknown level ranks as a warning)."""
    return LEVELS.index(level) if level in LEVELS else LEVELS.index("warning")


def worst(levels: Iterable[str]) -> str | None:
    """The worst of ``levels``, or None when there are none."""
    found = list(levels)
    return max(found, key=rank) if found else None


def summary_severity(causes: Iterable[str]) -> str:
    """A finding that sums up others (topology-mismatch) says no more than its causes: the
    worst of their levels, at least info. A live run does not raise it by itself: an extra log
    that is absent, or GPUs still idle while the job loads, stay what their own findings say."""
    level = worst(c for c in causes if c in SEVERITIES)
    return level or "info"


# The host and worker findings (findings_machine.py). disk-low is an error when the next
# checkpoint no longer fits; gpu-xid is a warning for the codes NVIDIA's catalog puts on the
# application (diagnosis/xid.py ``app``) and an error for the rest.
MACHINE = {
    "host-memory-low": "warning",
    "oom-killed": "error",
    "disk-low": "warning",
    "checkpoint-stale": "warning",
    "gpu-xid": "error",
    "gpu-lost": "error",
    "worker-stalled": "error",
}
DISK_NO_ROOM = "error"  # disk-low: the next checkpoint does not fit
XID_BY_APP = "warning"  # gpu-xid: a code caused by the application, not the GPU


def machine_severity(code: str, worse: bool = False) -> str:
    """A host or worker finding's level; ``worse``: the escalated case named above."""
    if code == "disk-low" and worse:
        return DISK_NO_ROOM
    if code == "gpu-xid" and worse:
        return XID_BY_APP
    return MACHINE[code]
