"""Findings: what is wrong, why it matters, what to do next (pure; built from a Diagnosis)."""

from __future__ import annotations

from collections.abc import Sequence

from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import mib
from dflash_tui.core.diagnosis.finding import Finding, gpus_text
from dflash_tui.core.diagnosis.findings_run import (
    log_findings,
    run_findings,
    supervisor_findings,
    telemetry_findings,
)
from dflash_tui.core.diagnosis.proc_order import heaviest_first, weight
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.severity import label_severity, rank, summary_severity
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis, GpuView, ProcView


def _label_message(code: str, ids: Sequence[int], views: Sequence[GpuView], active: bool) -> str:
    g = gpus_text(ids)
    if code == "idle":
        why = (
            "the run is supposed to be using them"
            if active
            else "no run of ours is alive, so nothing uses the GPUs the topology gives it"
        )
        nxt = "check the run's log for where it stopped" if active else "launch the run"
        return f"{g}: no process and no load where the topology expects work; {why}. Next: {nxt}."
    if code == "busy-no-memory":
        return (
            f"{g}: utilisation high with ~0 MiB used and no process: phantom load (a wedged "
            "context, a kernel left spinning by a dead process, or a stale reading), not the run. "
            "It will slow or block a new run there. Next: look for leftover processes in the "
            f"tree; if none, reset the GPU ({gpu_reset(ids)}) or restart the container."
        )
    if code == "foreign-process":
        foreign = {p.pid: p for v in views for p in v.processes if p.owner == "foreign"}
        procs = [_proc_text(p) for p in heaviest_first(foreign.values())]
        return (
            f"{g}: {', '.join(procs)}: another job's process on a GPU the topology gives to "
            "this run. Next: ask its owner, or change the topology (--topology)."
        )
    if code == "unexpected-activity":
        return (
            f"{g}: load or memory on a GPU outside the topology: another job, or a run "
            "misconfigured onto the wrong devices (CUDA_VISIBLE_DEVICES). Next: check its "
            "processes; fix --topology if the run should use it."
        )
    if code == "near-oom":
        return (
            f"{g}: memory nearly full; the next larger batch or sequence will fail with CUDA "
            "OOM. Next: lower the batch or sequence length, or check for a dense-attention "
            "fallback."
        )
    if code == "ecc-errors":
        return (
            f"{g}: uncorrected ECC errors: results on this GPU cannot be trusted. "
            "Next: drain it from the topology and have the GPU checked (nvidia-smi -q -d ECC)."
        )
    if code == "throttled":
        return (
            f"{g}: clocks held down by thermal or hardware slowdown; the run will be slower. "
            "Next: check cooling and power (nvidia-smi -q -d PERFORMANCE)."
        )
    if code == "missing":
        return (
            f"{g}: in the topology but not present on this machine (driver, "
            "CUDA_VISIBLE_DEVICES or container passthrough). Next: fix --topology or the "
            "container's GPU passthrough."
        )
    return f"{g}: {code}"


def gpu_reset(ids: Sequence[int]) -> str:
    """The reset command for these GPUs, each named with -i: a bare ``nvidia-smi -r`` resets
    every GPU of the machine (other jobs' too)."""
    if len(ids) == 1:
        return f"nvidia-smi -r -i {ids[0]}"
    return "nvidia-smi -r -i N, for N in " + ", ".join(str(i) for i in ids)


def _proc_text(p: ProcView, who: bool = False) -> str:
    extra = f"; user {p.user or '?'}: {_short(p.cmd) or '?'}" if who else ""
    return f"pid {p.pid} ({p.name or '?'}, {mib(p.used_mib)}{extra})"


def _short(cmd: str, limit: int = 80) -> str:
    cmd = " ".join(cmd.split())
    return cmd if len(cmd) <= limit else cmd[: limit - 3] + "..."


def _orphan_findings(views: Sequence[GpuView], run_known: bool) -> list[Finding]:
    """orphan-process, worded by the evidence: one finding per kind of evidence found."""
    out = []
    kinds: dict[str, list[tuple[int, ProcView]]] = {}
    for v in views:
        for p in v.processes:
            if p.owner == "orphan":
                kinds.setdefault(p.evidence or "init", []).append((v.index, p))
    for found in kinds.values():  # each kind's PIDs in the processes' one order
        found.sort(key=lambda ip: weight(ip[1]))
    attributed = sorted(kinds.get("group", []) + kinds.get("born-in-run", []),
                        key=lambda ip: weight(ip[1]))  # fmt: skip
    if attributed:
        ids = sorted({i for i, _ in attributed})
        parts = [
            f"{_proc_text(p)} on GPU {i}, left by {p.left_by or 'an earlier run'} "
            + (
                "(born while that run was alive, reparented to init when it ended)"
                if p.evidence == "born-in-run"
                else "(still in that run's process group or session)"
            )
            for i, p in attributed
        ]
        out.append(
            Finding(
                "orphan-process",
                "error",
                tuple(ids),
                f"{gpus_text(ids)}: {'; '.join(parts)}: still holding memory. Next: kill it from "
                "the process tree before restarting, or the new run may OOM.",
                "kill_process",
            )
        )
    reparented = kinds.get("init", [])
    if reparented:
        ids = sorted({i for i, _ in reparented})
        procs = ", ".join(f"{_proc_text(p, who=True)} on GPU {i}" for i, p in reparented)
        whose = "this run" if run_known else "a run of ours"
        out.append(
            Finding(
                "orphan-process",
                "warning",
                tuple(ids),
                f"{gpus_text(ids)}: {procs}: reparented to init, not started by {whose} (it is in "
                "no process group or session of our runs); it may be someone's nohup/setsid "
                "job. Next: check its owner and command before killing it.",
                "kill_process",
            )
        )
    vanished = kinds.get("vanished", [])
    if vanished:
        ids = sorted({i for i, _ in vanished})
        procs = ", ".join(f"{_proc_text(p)} on GPU {i}" for i, p in vanished)
        reset = gpu_reset(ids)
        out.append(
            Finding(
                "orphan-process",
                "warning",
                tuple(ids),
                f"{gpus_text(ids)}: {procs}: "
                + (
                    "the PID no longer exists (it is not in the host's process table), yet the "
                    "driver still counts its memory: a leftover of a process that ended. "
                    if len(vanished) == 1
                    else "the PIDs no longer exist (they are not in the host's process table), "
                    "yet the driver still counts their memory: leftovers of processes that "
                    "ended. "
                )
                + "A killed job's memory is usually released within seconds. "
                "Next: if it stays, look for the process in containers or other PID namespaces "
                f"on this machine, or reset the GPU ({reset}) when nothing runs on it.",
            )
        )
    return out


def _label_findings(diag: Diagnosis) -> list[Finding]:
    active = diag.run_state in ACTIVE
    out = []
    # Each label's GPUs in one pass over the GPUs (not one per label code), in their order.
    by_code: dict[str, list[GpuView]] = {}
    for v in diag.gpus:
        for code in dict.fromkeys(v.codes):
            by_code.setdefault(code, []).append(v)
    for code in GPU_LABELS:
        if code == "ok":
            continue
        views = by_code.get(code, [])
        if views and code == "orphan-process":
            out += _orphan_findings(views, diag.run is not None)
        elif views:
            ids = [v.index for v in views]
            msg = _label_message(code, ids, views, active)
            nxt = "launch" if code == "idle" and not active else None
            out.append(Finding(code, label_severity(code, active), tuple(ids), msg, nxt))
    return out


def _hidden_processes_finding(diag: Diagnosis, th: Thresholds) -> Finding | None:
    """GPU memory whose holders cannot be judged from here: no process listed, or processes
    whose PIDs are not in the probe's table (the driver's PIDs are not visible here)."""
    hidden = tuple(
        v.index
        for v in diag.gpus
        if v.gpu is not None and not v.processes and (v.gpu.mem_used_mib or 0) > th.near_zero_mib
    )
    unseen = [v for v in diag.gpus if any(p.owner == "unknown" for p in v.processes)]
    if not hidden and not unseen:
        return None
    parts = []
    if hidden:
        parts.append(
            f"{gpus_text(hidden)}: memory in use but no process listed; inside a container the "
            "driver often hides them, so ownership cannot be judged."
        )
    if unseen:
        ids = [v.index for v in unseen]
        held = heaviest_first(p for v in unseen for p in v.processes if p.owner == "unknown")
        pids = ", ".join(str(p.pid) for p in held)
        idle = any(v.unseen_holder for v in unseen)
        parts.append(
            f"{gpus_text(ids)}: held by pid {pids}, not in this process table; inside a container "
            "the driver reports host PIDs, so ownership cannot be judged"
            + ("; no run of ours is alive, so the GPU is not counted healthy." if idle else ".")
        )
    return Finding(
        "processes-not-visible",
        "info",
        tuple(sorted({*hidden, *(v.index for v in unseen)})),
        " ".join(parts) + " Next: set --container so the host side maps PIDs, or run the "
        "probe on the host.",
    )


def _causes(diag: Diagnosis, bad: tuple[int, ...], found: list[Finding]) -> list[str]:
    """The levels of what makes those GPUs unhealthy: the findings that name them, and a
    holder the probe cannot place (not healthy, yet no finding of its own says worse)."""
    levels = [f.severity for f in found if set(f.gpus) & set(bad)]
    if any(v.unseen_holder for v in diag.gpus if v.index in bad):
        levels.append("warning")
    return levels


def _topology_finding(diag: Diagnosis, found: list[Finding]) -> Finding | None:
    """topology-mismatch: GPUs that were read and are not fit for the run. Its advice names
    only what can be fixed: the labelled GPUs (their findings say how), GPUs the machine does
    not have (the topology); an unread GPU is unknown, not a mismatch."""
    bad = tuple(i for i in diag.topology.indices if diag.ready(i) is False)
    if not bad:
        return None
    codes = {v.index: [c for c in v.codes if c != "ok"] for v in diag.gpus}
    missing = [i for i in bad if codes.get(i) == ["missing"]]
    labelled = [i for i in bad if i not in missing and codes.get(i)]
    held = [i for i in bad if i not in missing and not codes.get(i)]  # an unplaced holder
    steps = []
    if labelled:
        which = ", ".join(f"GPU {i} ({', '.join(codes[i])})" for i in labelled)
        steps.append(f"fix {which} as their findings say")
    if held:
        steps.append(f"see who holds {gpus_text(held)} (the processes the probe cannot place)")
    if missing:
        steps.append(f"the machine has no {gpus_text(missing)}: correct --topology")
    return Finding(
        "topology-mismatch",
        summary_severity(_causes(diag, bad, found)),
        bad,
        f"target {diag.health_text('target')} and drafter {diag.health_text('drafter')} GPUs "
        f"healthy (topology {diag.topology.spec()}); the pipeline needs every one of them. "
        f"Next: {'; '.join(steps)}, then launch or restart.",
    )


def build_findings(
    diag: Diagnosis, snap: Snapshot, th: Thresholds, progress: Progress | None
) -> list[Finding]:
    found = [
        *run_findings(diag, th, progress),
        *log_findings(diag, th),
        *_label_findings(diag),
        *telemetry_findings(snap),
        *supervisor_findings(snap),
    ]
    hidden = _hidden_processes_finding(diag, th)
    if hidden is not None:
        found.append(hidden)
    topo = _topology_finding(diag, found) if diag.telemetry_source != "none" else None
    if topo is not None:
        found.append(topo)
    return sorted(found, key=lambda f: -rank(f.severity))
