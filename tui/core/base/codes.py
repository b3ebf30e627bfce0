"""The codes the diagnosis can say: GPU labels (in display order) and every finding code. One
home, so the alerts config (base) can validate ``on = [...]`` without importing the diagnosis."""

from __future__ import annotations

GPU_LABELS = (
    "ok",
    "idle",
    "busy-no-memory",
    "orphan-process",
    "foreign-process",
    "unexpected-activity",
    "near-oom",
    "ecc-errors",
    "throttled",
    "missing",
)
# Every finding code (labels but "ok" among them): any may be asked for in [alerts] on.
FINDING_CODES = (
    *GPU_LABELS[1:],
    "log-missing",
    "launch-failed",
    "run-exited",
    "no-progress",
    "topology-mismatch",
    "telemetry-unavailable",
    "loss-not-finite",
    "telemetry-degraded",
    "probe-degraded",
    "processes-not-visible",
    "host-unreachable",
    "supervisor-stale",
    "host-memory-low",
    "oom-killed",
    "disk-low",
    "checkpoint-stale",
    "gpu-xid",
    "gpu-lost",
    "worker-stalled",
    # A run under Slurm (tui/core/control/slurm/findings.py)
    "queued",
    "job-suspended",
    "node-down",
    "node-drained",
    "scheduler-ended-job",
    "scheduler-unavailable",
)
