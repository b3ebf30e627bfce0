"""What the app's host strip and ``status``'s ``machine:`` and ``workers:`` lines say (pure):
host RAM, swap and the free space of the run's filesystems, each with a level (``ok``,
``warning``, ``error``) by the same thresholds as the findings; and the pipeline's workers as
one row, the one behind marked by the rule ``worker-stalled`` uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dflash_tui.core.base.machine import Disk, Machine, Worker
from dflash_tui.core.base.text import mib, printable, size
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds

_ROLE_ORDER = {"loader": 0, "target": 1, "drafter": 2}


@dataclass(frozen=True)
class HostPart:
    """One reading: ``what`` (ram, swap, oom, disk), its long and short text, its level."""

    what: str
    text: str
    short: str
    level: str = "ok"


def _gib(kb: int) -> str:
    return mib(kb / 1024)


def _ram(m: Machine, th: Thresholds) -> HostPart | None:
    total, avail = m.mem_total_kb, m.mem_available_kb
    if not total or avail is None:
        return None
    low = avail < th.host_mem_low_fraction * total
    pct = 100.0 * avail / total
    return HostPart(
        "ram",
        f"RAM {_gib(avail)} available of {_gib(total)} ({pct:.0f} %)",
        f"RAM {_gib(avail)} free",
        "warning" if low else "ok",
    )


def _swap(m: Machine, th: Thresholds) -> HostPart | None:
    if m.swap_total_kb is None:
        return None
    if m.swap_total_kb == 0:
        return HostPart("swap", "swap none", "swap none")
    used = m.swap_total_kb - (m.swap_free_kb or 0)
    high = used > th.swap_used_fraction * m.swap_total_kb
    return HostPart(
        "swap",
        f"swap {_gib(used)} used of {_gib(m.swap_total_kb)}",
        f"swap {_gib(used)} used",
        "warning" if high else "ok",
    )


def _disk_groups(m: Machine) -> list[list[Disk]]:
    """The run's paths by filesystem (the same totals and free counts), run root first."""
    out: dict[tuple[object, ...], list[Disk]] = {}
    for d in m.disks:
        key: tuple[object, ...] = (d.total_bytes, d.free_bytes, d.total_inodes, d.free_inodes)
        if d.total_bytes is None or d.free_bytes is None:
            key = ("unread", d.what)
        out.setdefault(key, []).append(d)
    return list(out.values())


def _disk(group: Sequence[Disk], m: Machine, th: Thresholds) -> HostPart:
    d = group[0]
    # The probe's words (its names, paths and errors) are shown escaped on every path.
    names = printable(", ".join(x.what.replace("_", " ") for x in group))
    if d.total_bytes is None or d.free_bytes is None:
        why = f" ({printable(d.error)})" if d.error else ""
        path = printable(d.path)
        return HostPart("disk", f"{names} {path}: not readable{why}", f"{names} ?", "warning")
    free, total = d.free_bytes, d.total_bytes
    ckpt = m.checkpoint.size_bytes if m.checkpoint is not None else None
    inodes_low = bool(d.total_inodes) and (d.free_inodes or 0) < th.disk_low_fraction * (
        d.total_inodes or 0
    )
    level = "ok"
    if free < th.disk_low_fraction * total or inodes_low:
        level = "warning"
    if ckpt is not None and free < ckpt:
        level = "error"
    pct = 100.0 * free / total if total else 0.0
    inodes = f", {d.free_inodes} inodes free" if inodes_low else ""
    return HostPart(
        "disk",
        f"{names} {printable(d.path)}: {size(free)} free of {size(total)} ({pct:.0f} %){inodes}",
        f"{names} {size(free)} free",
        level,
    )


def host_parts(m: Machine | None, th: Thresholds = DEFAULT) -> list[HostPart]:
    """RAM, swap, the kernel's OOM kills since boot (when any) and each filesystem of the
    run's paths; empty when the probe sent no machine readings."""
    if m is None:
        return []
    out = [p for p in (_ram(m, th), _swap(m, th)) if p is not None]
    if m.oom_kill:
        out.append(HostPart("oom", f"{m.oom_kill} OOM kills since boot", f"OOM {m.oom_kill}"))
    out += [_disk(g, m, th) for g in _disk_groups(m)]
    return out


def machine_line(m: Machine | None, th: Thresholds = DEFAULT) -> str:
    """``status``'s line: ``machine: RAM ... ; swap none; run root /r: 58.4 GiB free ...``."""
    parts = host_parts(m, th)
    if not parts:
        return "machine: no readings (the probe sent none)"
    return "machine: " + "; ".join(p.text + (" [LOW]" if p.level != "ok" else "") for p in parts)


# -- workers --


def stall_limit(th: Thresholds, progress: Progress | None) -> float:
    """Seconds without progress after which a worker is stalled (``worker-stalled``)."""
    usual = progress.typical_interval if progress is not None else None
    return max(th.worker_stall_factor * (usual or 0.0), th.worker_stall_min_s)


def stalled_for(w: Worker, now: float, limit: float, fresh: bool) -> float | None:
    """Seconds a worker has been stuck: busy on its own step past the limit, or silent while
    other workers still beat (another rank's process). None: not stalled."""
    if w.time is not None and now - w.time > limit and fresh:
        return now - w.time
    busy = w.state == "work" and w.since is not None and w.time is not None
    if busy and now - (w.time or 0) <= limit and now - (w.since or 0) > limit:
        return now - (w.since or 0)
    return None


@dataclass(frozen=True)
class WorkerView:
    """A worker's cell in the row: ``stalled_s`` set when it is the one behind."""

    worker: Worker
    stalled_s: float | None = None

    @property
    def behind(self) -> bool:
        return self.stalled_s is not None

    @property
    def waiting(self) -> bool:
        return (self.worker.state or "").startswith("wait")


def worker_views(
    workers: Sequence[Worker],
    now: float,
    th: Thresholds = DEFAULT,
    progress: Progress | None = None,
) -> list[WorkerView]:
    """The workers in a stable order (rank, loader, targets, drafters, index), each marked
    stalled by the rule ``worker-stalled`` uses."""
    limit = stall_limit(th, progress)
    fresh = any(w.time is not None and now - w.time <= limit for w in workers)
    order = sorted(
        workers, key=lambda w: (w.rank or 0, _ROLE_ORDER.get(w.role, 9), w.role, w.index)
    )
    return [WorkerView(w, stalled_for(w, now, limit, fresh)) for w in order]


def worker_label(w: Worker) -> str:
    """``T0`` / ``D1`` / ``L`` (``r1:D1`` on a torchrun rank other than 0) and ``@g6``."""
    letter = {"target": "T", "drafter": "D", "loader": "L"}.get(w.role, w.role[:1].upper())
    name = letter if w.role == "loader" else f"{letter}{w.index}"
    rank = f"r{w.rank}:" if w.rank else ""
    gpu = f"@g{w.gpu}" if w.gpu is not None else ""
    return printable(f"{rank}{name}{gpu}")


def workers_line(views: Sequence[WorkerView]) -> str:
    """``status``'s line: ``workers: L s12, T0@g0 s12, ..., D1@g6 s3 BEHIND 1m30s, ...``."""
    if not views:
        return "workers: no heartbeats (not the DFlash pipeline, or none yet)"
    cells = []
    for v in views:
        step = f" s{v.worker.step}" if v.worker.step is not None else " s-"
        mark = f" BEHIND {duration(v.stalled_s or 0)}" if v.behind else ""
        cells.append(f"{worker_label(v.worker)}{step}{mark}")
    return "workers: " + ", ".join(cells)
