"""The diagnosis: recent snapshots + topology + settings -> labels per GPU and findings (pure).

Every label follows from rules on the readings, never from a known scenario. In live mode a
reading-based label must hold for ``Thresholds.persist_s`` before it is reported, so one noisy
sample does not flash a warning; each label carries since when it has held.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from dflash_train.topology import Topology
from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.rundir import state_of
from dflash_tui.core.base.snapshot import Gpu, GpuProcess, LogState, Snapshot
from dflash_tui.core.diagnosis.findings_gpu import build_findings
from dflash_tui.core.diagnosis.findings_machine import machine_findings
from dflash_tui.core.diagnosis.ownership import judge, live_members, run_alive
from dflash_tui.core.diagnosis.proc_order import heaviest_first
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.severity import rank
from dflash_tui.core.diagnosis.since import began, carried, carried_log, starting_up
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis, GpuView, Label, LogView, ProcView

# Labels read off instantaneous readings: they must persist in live mode before being shown.
# (So must an orphan-process that rests only on vanished PIDs: see _flappy.)
_FLAPPY = frozenset({"busy-no-memory", "unexpected-activity", "throttled", "near-oom"})
BAD_LABELS = frozenset(GPU_LABELS) - {"ok"}


def _gpu_labels(gpu: Gpu, role: str, procs: Sequence[ProcView], th: Thresholds) -> set[str]:
    labels: set[str] = set()
    used, util = gpu.mem_used_mib, gpu.util
    owners = {p.owner for p in procs}
    quiet_mem = used is None or used <= th.near_zero_mib
    if "orphan" in owners:
        labels.add("orphan-process")
    if role != "unassigned" and "foreign" in owners:
        labels.add("foreign-process")
    if not procs and util is not None and util >= th.high_util_pct and quiet_mem:
        labels.add("busy-no-memory")
    active = bool(procs) or (util or 0) >= th.activity_util_pct or not quiet_mem
    if role == "unassigned" and active and "busy-no-memory" not in labels:
        labels.add("unexpected-activity")
    if role != "unassigned" and not active:
        labels.add("idle")  # loaded with no visible process is not idle (see findings)
    if used is not None and gpu.mem_total_mib and used / gpu.mem_total_mib >= th.near_oom_fraction:
        labels.add("near-oom")
    if gpu.ecc_uncorrected:
        labels.add("ecc-errors")
    if gpu.throttle_reasons is not None and gpu.throttle_reasons & th.throttle_mask:
        labels.add("throttled")
    return labels or {"ok"}


def _proc_view(gp: GpuProcess, snap: Snapshot) -> ProcView:
    owner, evidence, left_by = judge(gp, snap)
    p = snap.proc(gp.container_pid if gp.container_pid is not None else gp.pid)
    return ProcView(
        pid=gp.pid,
        container_pid=gp.container_pid,
        name=gp.name,
        used_mib=gp.used_mib,
        owner=owner,
        cmd=p.cmd if p else "",
        evidence=evidence,
        left_by=left_by,
        user=p.user if p else "",
        cpu_pct=p.cpu_pct if p else None,
    )


_VIEWS = "_dflash_views"  # a snapshot's own memo of _sample_views, per (topology, thresholds)
_LAST = "_dflash_views_last"  # the (topology, thresholds, answer) asked last


# Runs: for each (GPU, label) of a sample, how many samples in a row, ending with it, carried
# the label; each answer's runs are counted on from the answer of the sample before it, and
# are valid for a window only when every answer's runs were counted from the answer before it
# in that window (told by the serial number each counting gets: never reused).
_Runs = dict[tuple[int, str], int]
_SERIAL = itertools.count(1)


class _Views:
    """One sample's answer: per GPU its view and raw labels, the labels alone, and ``chain``:
    (its serial, the serial of the answer its runs were counted from, 0 for none, its runs),
    set as one tuple (two diagnoses at once may count the same sample)."""

    __slots__ = ("chain", "labels", "views")

    def __init__(self, views: dict[int, tuple[GpuView, set[str]]]) -> None:
        self.views = views
        self.labels = {i: labels for i, (_, labels) in views.items()}
        self.chain: tuple[int, int, _Runs] | None = None


def _sample_views(snap: Snapshot, topology: Topology, th: Thresholds) -> _Views:
    """Every diagnosis looks at each sample of its window (60 or more), so each sample's
    answer is kept on the (frozen) snapshot: one computation per sample instead of one per
    sample per diagnosis. A tracker asks with the same two objects every time: those are
    recognised by identity first (hashing the thresholds' fields per sample per diagnosis
    cost more than the lookup saved)."""
    memo = snap.__dict__
    last = memo.get(_LAST)
    if last is not None and last[0] is topology and last[1] is th:
        return last[2]
    kept: dict[tuple[Topology, Thresholds], _Views] = memo.setdefault(_VIEWS, {})
    key = (topology, th)
    answer = kept.get(key)
    if answer is None:
        answer = kept[key] = _Views(_compute_views(snap, topology, th))
    memo[_LAST] = (topology, th, answer)
    return answer


def _compute_views(
    snap: Snapshot, topology: Topology, th: Thresholds
) -> dict[int, tuple[GpuView, set[str]]]:
    out: dict[int, tuple[GpuView, set[str]]] = {}
    alive = run_alive(snap)
    for gpu in snap.gpus:
        role = topology.role(gpu.index)
        procs = heaviest_first(_proc_view(gp, snap) for gp in snap.procs_on(gpu))
        # Memory held by processes we cannot see, once our run has ended: likely its leftovers,
        # not health. With no run record at all (a job started by hand, the seed's story) the
        # holders may well be that job: judged by the labels alone.
        unseen = snap.run is not None and not alive and any(p.owner == "unknown" for p in procs)
        view = GpuView(gpu.index, role, gpu, procs, (), unseen)
        out[gpu.index] = (view, _gpu_labels(gpu, role, procs, th))
    if snap.telemetry.source != "none":
        for i in topology.indices:
            if i not in out:
                out[i] = (GpuView(i, topology.role(i), None, (), ()), {"missing"})
    return out


def _runs(window: Sequence[Snapshot], topology: Topology, th: Thresholds) -> _Runs:
    """The latest sample's runs over ``window``: a label held by the latest sample since
    window[-r] (or before the window, when r >= len(window)). A tracker's window moves on by a
    sample: the earlier answers' runs still hold (each was counted from the answer before it,
    which is still in the window, unchanged), and only the new sample's are counted, instead
    of walking the window back for every label of every GPU. The first sample of a window may
    have been counted from one before the window: its runs then say at least as much as the
    window's, and a run reaching past the window's start reads as its first sample anyway."""
    before, runs = 0, None
    for s in window:
        last = s.__dict__.get(_LAST)
        answer = last[2] if last is not None and last[0] is topology and last[1] is th else None
        if answer is None:
            answer = _sample_views(s, topology, th)
        chain = answer.chain
        if chain is None or (runs is not None and chain[1] != before):
            old: _Runs = runs or {}
            runs = {
                (i, code): old.get((i, code), 0) + 1
                for i, labels in answer.labels.items()
                for code in labels
            }
            chain = answer.chain = (next(_SERIAL), before, runs)
        before, runs = chain[0], chain[2]
    assert runs is not None
    return runs


def _flappy(code: str, view: GpuView) -> bool:
    """Must this label persist in live mode before it is shown? Readings-based labels, and an
    orphan-process that rests only on vanished PIDs: a killed job's memory is usually back
    within seconds, and a process that exits between the GPU and the /proc reads looks so."""
    if code in _FLAPPY:
        return True
    orphans = [p for p in view.processes if p.owner == "orphan"]
    return code == "orphan-process" and all(p.evidence == "vanished" for p in orphans)


def _held(since: float, now: float, first: float, live: bool, flappy: bool, th: Thresholds) -> bool:
    if not live or not flappy:
        return True
    # Held for the whole window, or for all the history there is when it is shorter.
    return now - since >= th.persist_s or since <= first


def _log_views(snapshots: Sequence[Snapshot]) -> tuple[LogView, ...]:
    latest = snapshots[-1]
    out = []
    for log in latest.logs:
        since = None
        if not log.exists:
            since = latest.time
            for snap in reversed(snapshots):
                state = _find_log(snap.logs, log.path)
                if state is None or state.exists:
                    break
                since = snap.time
        first = since is not None and since <= snapshots[0].time
        out.append(LogView(log.path, log.exists, log.size, since, log.is_run_log, log.error, first))
    return tuple(out)


def _find_log(logs: Sequence[LogState], path: str) -> LogState | None:
    return next((x for x in logs if x.path == path), None)


def _carry_logs(logs: Sequence[LogView], earlier: Diagnosis | None) -> tuple[LogView, ...]:
    if earlier is None:
        return tuple(logs)
    gone = {lg.path: lg for lg in earlier.logs if lg.missing_since is not None}
    return tuple(carried_log(lg, gone.get(lg.path)) for lg in logs)


def window_s(th: Thresholds) -> float:
    """How far back from the latest sample the diagnosis looks (seconds)."""
    return max(th.persist_s * 3, 60.0)


def diagnose(
    snapshots: Sequence[Snapshot],
    topology: Topology,
    th: Thresholds = DEFAULT,
    progress: Progress | None = None,
    live: bool = False,
    earlier: Diagnosis | None = None,
) -> Diagnosis:
    """Label every GPU and list what is wrong. ``snapshots`` is oldest first, at least one.

    ``earlier`` is the diagnosis of the previous sample: states that still hold keep its
    ``since``, so durations outlive the bounded history.
    """
    if not snapshots:
        raise ValueError("diagnose needs at least one snapshot")
    latest = snapshots[-1]
    span, now = window_s(th), latest.time
    window = [s for s in snapshots if now - s.time <= span]
    runs, n, first = _runs(window, topology, th), len(window), window[0].time
    answer = _sample_views(latest, topology, th)
    # Each label as it holds on from the previous diagnosis: the earlier start (and whether
    # that start is only a lower bound) wins.
    was = {(g.index, lb.code): lb for g in earlier.gpus for lb in g.labels} if earlier else {}
    gpus: list[GpuView] = []
    # A quiet GPU of a run still starting is not idle (the one rule: ``starting_up``).
    quiet_ok = {"idle"} if starting_up(latest, th, progress) else set()
    for index, (view, labels) in sorted(answer.views.items()):
        kept = []
        for code in sorted(labels - quiet_ok, key=GPU_LABELS.index):
            since = window[n - min(runs[index, code], n)].time
            if _held(since, now, first, live, _flappy(code, view), th):
                kept.append(began(Label(code, since, since <= first), latest))
        if not kept:
            kept = [Label("ok", now)]
        labels_out = tuple(carried(lb, was.get((index, lb.code))) for lb in kept)
        gpus.append(replace(view, labels=labels_out))
    logs = _carry_logs(_log_views(window), earlier)
    # The run's members, as the views above found them (one pass over the table, not two).
    alive = latest.run is not None and bool(live_members(latest))
    state = state_of(latest.run, alive, now, th.start_window_s)
    diag = Diagnosis(
        time=latest.time,
        host=latest.host,
        topology=topology,
        run_state=state,
        run=latest.run,
        gpus=tuple(gpus),
        logs=logs,
        telemetry_source=latest.telemetry.source,
        telemetry_error=latest.telemetry.error,
        interval=latest.interval,
        supervisor=latest.supervisor,
        last_step=latest.last_step,
        machine=latest.machine,
        workers=latest.workers,
        thresholds=th,
    )
    findings = build_findings(diag, latest, th, progress)
    findings += machine_findings(diag, window, th, progress)
    findings.sort(key=lambda f: -rank(f.severity))
    return Diagnosis(**{**diag.__dict__, "findings": tuple(findings)})
