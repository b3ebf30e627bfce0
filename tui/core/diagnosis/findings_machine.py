"""Findings about what kills runs besides the GPUs' load (pure): host memory and the OOM killer,
full disks, stale checkpoints, Xid errors, GPUs fallen off the bus, and a pipeline worker that
stopped while the others wait (the probe's ``machine`` and ``workers`` keys)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from dflash_tui.core.base.machine import Disk, Machine
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import mib, size
from dflash_tui.core.diagnosis.finding import Finding, duration, gpus_text
from dflash_tui.core.diagnosis.host_view import stall_limit, stalled_for
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.severity import machine_severity as sev
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.diagnosis.xid import describe_xid

T = TypeVar("T")  # a reading of one sample (_ends)

# nvidia-smi's words for a GPU it cannot reach (the bus id follows "GPU").
_SMI_LOST = re.compile(
    r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)|GPU is lost"
)
_PCI = re.compile(r"(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})")


def machine_findings(
    diag: Diagnosis, window: Sequence[Snapshot], th: Thresholds, progress: Progress | None
) -> list[Finding]:
    latest = window[-1]
    m = latest.machine
    out: list[Finding] = []
    if m is not None:
        out += _memory(m, th)
        out += _disks(diag, window, th)
        out += _checkpoint(diag, m, th, progress)
    out += _oom(diag, window)
    xids = _xid_events(diag, window)  # both read it: one walk of the window's NVML events
    lost = _lost(diag, window, xids)
    out += lost
    out += _xids(xids, {i for f in lost for i in f.gpus})
    out += _workers(diag, latest, th, progress)
    return out


def _gib(kb: int) -> str:
    return mib(kb // 1024)


def _memory(m: Machine, th: Thresholds) -> list[Finding]:
    total, avail = m.mem_total_kb, m.mem_available_kb
    if not total or avail is None:
        return []
    swap_used = (m.swap_total_kb or 0) - (m.swap_free_kb or 0)
    low_ram = avail < th.host_mem_low_fraction * total
    swapping = bool(m.swap_total_kb) and swap_used > th.swap_used_fraction * (m.swap_total_kb or 1)
    if not low_ram and not swapping:
        return []
    swap = (
        f"; swap {_gib(swap_used)} of {_gib(m.swap_total_kb or 0)} used" if m.swap_total_kb else ""
    )
    return [
        Finding(
            "host-memory-low",
            sev("host-memory-low"),
            (),
            f"host RAM: {_gib(avail)} available of {_gib(total)} "
            f"({100.0 * avail / total:.1f} %){swap}. When it runs out the kernel's OOM killer "
            "kills the largest process, most likely a worker of the run, and swapping first "
            "slows every step. Next: stop other jobs on the host, lower the data loader's "
            "prefetch or batch, or add memory/swap.",
        )
    ]


def _groups(disks: Sequence[Disk]) -> list[list[Disk]]:
    """Disks on one filesystem (the same totals and free counts) are said once."""
    out: dict[tuple[object, ...], list[Disk]] = {}
    for d in disks:
        if d.total_bytes is None or d.free_bytes is None:
            continue
        out.setdefault((d.total_bytes, d.free_bytes, d.total_inodes, d.free_inodes), []).append(d)
    return list(out.values())


def _free(snap: Snapshot, what: str) -> tuple[float, int] | None:
    """(time, free bytes) of disk ``what`` in one sample, when it says."""
    d = snap.machine.disk(what) if snap.machine is not None else None
    return None if d is None or d.free_bytes is None else (snap.time, d.free_bytes)


def _ends(window: Sequence[Snapshot], read: Callable[[Snapshot], T | None]) -> tuple[T, T] | None:
    """The first and the last reading ``read`` finds over the window (one sample's: that one
    twice), None when no sample has one. They are looked for from either end, not every
    sample read: each diagnosis of every host asks for each disk and the OOM counter."""
    first = next((r for s in window if (r := read(s)) is not None), None)
    if first is None:
        return None
    last = next(r for s in reversed(window) if (r := read(s)) is not None)
    return first, last


def _rate(window: Sequence[Snapshot], what: str) -> float | None:
    """Bytes a second the free space of ``what`` shrank over the window (None: not shrinking):
    from the first sample that says it to the last."""
    ends = _ends(window, lambda s: _free(s, what))
    if ends is None or ends[1][0] <= ends[0][0]:
        return None
    (t0, free0), (t1, free1) = ends
    rate = (free0 - free1) / (t1 - t0)
    return rate if rate > 0 else None


def _disks(diag: Diagnosis, window: Sequence[Snapshot], th: Thresholds) -> list[Finding]:
    m = window[-1].machine
    assert m is not None
    ckpt = m.checkpoint.size_bytes if m.checkpoint is not None else None
    out = []
    for group in _groups(m.disks):
        d = group[0]
        free, total = d.free_bytes or 0, d.total_bytes or 0
        rate = _rate(window, d.what)
        eta = free / rate if rate else None
        no_room = ckpt is not None and free < ckpt
        inodes_low = bool(d.total_inodes) and (d.free_inodes or 0) < th.disk_low_fraction * (
            d.total_inodes or 0
        )
        low = free < th.disk_low_fraction * total or inodes_low
        if not (low or no_room or (eta is not None and eta < th.disk_full_horizon_s)):
            continue
        where = ", ".join(f"{x.what.replace('_', ' ')} {x.path}" for x in group)
        speed = f", shrinking {size(rate)}/s: full in about {duration(eta or 0)}" if rate else ""
        if ckpt is None:
            fits = "no checkpoint yet to size the next one by"
        else:
            fits = f"the next checkpoint ({size(ckpt)}) {'does NOT fit' if no_room else 'fits'}"
        inode_text = f", {d.free_inodes} inodes free" if inodes_low else ""
        out.append(
            Finding(
                "disk-low",
                sev("disk-low", worse=no_room),
                (),
                f"{where}: {size(free)} free of {size(total)}{inode_text}{speed}; "
                f"{fits}. A full disk fails the checkpoint save (the run dies with "
                "'No space left on device') and the log stops. Next: free space there (old "
                "run directories, checkpoints, the compile cache) or move --out-dir.",
            )
        )
    return out


def _checkpoint(
    diag: Diagnosis, m: Machine, th: Thresholds, progress: Progress | None
) -> list[Finding]:
    run = diag.run
    if diag.run_state != "running" or run is None or run.started_at is None:
        return []
    ck = m.checkpoint
    at = ck.mtime if ck is not None and ck.mtime is not None else None
    age = diag.time - (at if at is not None else run.started_at)
    stepping = progress is not None and progress.last_step_at is not None
    if age <= th.checkpoint_stale_s or not stepping:
        return []
    what = (
        f"newest checkpoint {ck.path} (step {ck.step}) is {duration(age)} old"
        if ck is not None
        else f"no checkpoint after {duration(age)} of running"
    )
    return [
        Finding(
            "checkpoint-stale",
            sev("checkpoint-stale"),
            (),
            f"run {run.id}: {what} while it keeps stepping: a crash now loses all that work. "
            "Next: check the run was given --checkpoint-every and that saves do not fail "
            "(the log, free disk space).",
        )
    ]


def _run_pids(diag: Diagnosis, snap: Snapshot) -> dict[int, str]:
    """PID -> command line of the run's processes in one sample (its group or session)."""
    run = diag.run
    if run is None or run.pgid is None:
        return {}
    return snap.member_cmds(run.pgid)


def _oom_count(snap: Snapshot) -> int | None:
    return snap.machine.oom_kill if snap.machine is not None else None


def _oom(diag: Diagnosis, window: Sequence[Snapshot]) -> list[Finding]:
    """A process of the run killed by the kernel: the kernel log names it; else the OOM-kill
    counter rose while one of the run's processes vanished."""
    latest = window[-1]
    m = latest.machine
    counts = _ends(window, _oom_count)  # the counter's first and last reading
    rose = counts is not None and counts[1] > counts[0]
    if diag.run is None or not (rose or (m is not None and m.kernel_ooms)):
        return []  # nothing could be named: the run's processes over the window are not read
    seen: dict[int, str] = {}
    for s in window:
        seen.update(_run_pids(diag, s))
    now = _run_pids(diag, latest)
    named = []
    started = diag.run.started_at
    for line in m.kernel_ooms if m is not None else ():
        recent = started is not None and line.time is not None and line.time >= started
        if line.pid in seen or recent:
            named.append(f"pid {line.pid} ({line.name}) [kernel: {line.text[:160]}]")
    if not named and rose and counts is not None:
        gone = [f"pid {pid} ({cmd[:80]})" for pid, cmd in seen.items() if pid not in now]
        named = [f"{x} (gone while the kernel's OOM-kill count rose "
                 f"{counts[0]} -> {counts[1]})" for x in gone]  # fmt: skip
    if not named:
        return []
    return [
        Finding(
            "oom-killed",
            sev("oom-killed"),
            (),
            f"run {diag.run.id}: killed by the kernel's OOM killer: {'; '.join(named[:3])}. "
            "Host RAM ran out (data loader workers, pinned buffers, a leak). Next: lower the "
            "batch or the loader's prefetch, stop other jobs on the host, then restart.",
            "restart",
        )
    ]


def _pci_key(text: str | None) -> tuple[int, int] | None:
    """(bus, device) of a PCI address as NVML ("00000000:18:00.0") or the kernel
    ("0000:18:00") writes it."""
    if not text:
        return None
    parts = text.strip().split(":")
    if len(parts) < 2:
        return None
    try:
        return int(parts[-2], 16), int(parts[-1].split(".")[0], 16)
    except ValueError:
        return None


def _gpu_at(diag: Diagnosis, window: Sequence[Snapshot], pci: str | None) -> int | None:
    key = _pci_key(pci)
    for s in reversed(window):
        for g in s.gpus:
            if key is not None and _pci_key(g.bus_id) == key:
                return g.index
    return None


def _xid_events(
    diag: Diagnosis, window: Sequence[Snapshot]
) -> dict[int, list[tuple[int | None, str]]]:
    """Xid code -> [(GPU index or None, where it was read)], from NVML's events over the window
    and the kernel log's lines since the run started (or all it kept, with no run)."""
    out: dict[int, list[tuple[int | None, str]]] = {}
    for s in window:
        for index, code in s.machine.nvml_xids if s.machine is not None else ():
            out.setdefault(code, []).append((index, "NVML"))
    m = window[-1].machine
    started = diag.run.started_at if diag.run is not None else None
    for line in m.kernel_xids if m is not None else ():
        if line.code is None or (started is not None and (line.time or 0) < started):
            continue
        out.setdefault(line.code, []).append((_gpu_at(diag, window, line.pci), "kernel log"))
    return out


def _xids(events: dict[int, list[tuple[int | None, str]]], lost: set[int]) -> list[Finding]:
    out = []
    for code, where in sorted(events.items()):
        if code == 79:
            continue  # said by gpu-lost
        ids = tuple(sorted({i for i, _ in where if i is not None}))
        x = describe_xid(code)
        on = gpus_text(ids) if ids else "a GPU (its bus id matches no GPU read here)"
        src = " and ".join(sorted({w for _, w in where}))
        out.append(
            Finding(
                "gpu-xid",
                sev("gpu-xid", worse=x.app),
                ids,
                f"{on}: Xid {code} ({src}, {len(where)}x): {x.meaning}. Next: {x.next_step}.",
                "restart" if x.app else None,
            )
        )
    return out


def _lost(
    diag: Diagnosis, window: Sequence[Snapshot], xids: dict[int, list[tuple[int | None, str]]]
) -> list[Finding]:
    """gpu-lost: NVML says GPU_IS_LOST, Xid 79 was logged (``xids``: ``_xid_events``), or
    nvidia-smi cannot reach it."""
    latest = window[-1]
    why: dict[int | None, str] = {}
    for h in latest.machine.gpu_health if latest.machine else ():
        if h.lost:
            why[h.index] = f"NVML: {h.error or 'GPU is lost'}"
    for code, where in xids.items():
        if code == 79:
            for i, src in where:
                why.setdefault(i, f"Xid 79 in the {src}")
    texts = [*latest.errors, latest.telemetry.error or ""]
    for t in texts:
        hit = _SMI_LOST.search(t)
        if hit:
            why.setdefault(_gpu_at(diag, window, hit.group(1)), f"nvidia-smi: {hit.group(0)}")
    if not why:
        return []
    ids = tuple(sorted(i for i in why if i is not None))
    on = gpus_text(ids) if ids else "a GPU"
    return [
        Finding(
            "gpu-lost",
            sev("gpu-lost"),
            ids,
            f"{on}: fallen off the bus ({'; '.join(why.values())}): the driver can no longer "
            "reach it, and every process on it is stuck or dead. Next: stop the run, reboot "
            "the machine (a GPU reset rarely brings it back), and have the GPU checked if it "
            "happens again.",
            "kill",
        )
    ]


def _workers(
    diag: Diagnosis, snap: Snapshot, th: Thresholds, progress: Progress | None
) -> list[Finding]:
    if diag.run_state not in ACTIVE or not snap.workers:
        return []
    limit = stall_limit(th, progress)
    now = diag.time
    fresh = any(w.time is not None and now - w.time <= limit for w in snap.workers)
    out = []
    for w in snap.workers:
        stuck = stalled_for(w, now, limit, fresh)
        if stuck is None:
            continue
        others = [x for x in snap.workers if x is not w]
        waiting = sum(1 for x in others if (x.state or "").startswith("wait"))
        out.append(
            Finding(
                "worker-stalled",
                sev("worker-stalled"),
                (w.gpu,) if w.gpu is not None else (),
                f"{w.name} has made no progress for {duration(stuck)} at step {w.step} "
                f"(queue {w.queue}); {waiting} of the {len(others)} other workers wait on it. "
                "A kernel stuck in the driver, a deadlock, or a dead peer in a collective. "
                "Next: look at that GPU (Xid, utilisation) and the log; restart the run.",
                "restart",
            )
        )
    return out
