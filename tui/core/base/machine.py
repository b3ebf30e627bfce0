"""The host around the GPUs, as the probe reads it (its ``machine`` and ``workers`` keys):
memory, swap, the OOM-kill count, free space of the run's paths, the newest checkpoint, the
kernel log's Xid and OOM lines, NVML's per-GPU health, and each pipeline worker's heartbeat.

Parsed tolerantly like the rest of a snapshot: a value of the wrong type is unknown (None), a
malformed row is skipped. docs/internals.md lists the keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dflash_tui.core.base.fields import as_dicts, as_float, as_int, as_str, as_table


@dataclass(frozen=True)
class Disk:
    """Free space of the filesystem under one of the run's paths (``what``: run_root, out_dir,
    compile_cache)."""

    what: str
    path: str
    exists: bool = False
    free_bytes: int | None = None
    total_bytes: int | None = None
    free_inodes: int | None = None
    total_inodes: int | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Disk | None:
        what, path = as_str(d.get("what")), as_str(d.get("path"))
        if what is None or path is None:
            return None
        return cls(what, path, d.get("exists") is True, as_int(d.get("free_bytes")),
                   as_int(d.get("total_bytes")), as_int(d.get("free_inodes")),
                   as_int(d.get("total_inodes")), as_str(d.get("error")))  # fmt: skip


@dataclass(frozen=True)
class Checkpoint:
    path: str
    step: int | None = None
    mtime: float | None = None
    size_bytes: int | None = None


@dataclass(frozen=True)
class KernelLine:
    """An NVRM Xid line (``code`` set) or an OOM kill (``code`` None) of the kernel log."""

    time: float | None
    text: str
    code: int | None = None
    pci: str | None = None
    pid: int | None = None
    name: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KernelLine:
        return cls(as_float(d.get("time")), as_str(d.get("text")) or "", as_int(d.get("code")),
                   as_str(d.get("pci")), as_int(d.get("pid")), as_str(d.get("name")))  # fmt: skip


@dataclass(frozen=True)
class GpuHealth:
    """NVML's health readings of one GPU; None where NVML does not offer them."""

    index: int
    uuid: str | None = None
    lost: bool = False
    error: str | None = None
    xids: tuple[tuple[float | None, int], ...] = ()  # (time, code) seen since the last sample
    remap_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    retired_double_bit: int | None = None
    pcie_replay: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuHealth | None:
        index = as_int(d.get("index"))
        if index is None:
            return None
        rows = as_table(d.get("remapped_rows"))
        pages = as_table(d.get("retired_pages"))
        xids = tuple(
            (as_float(x.get("time")), code)
            for x in as_dicts(d.get("xids"))
            if (code := as_int(x.get("code"))) is not None
        )
        pending, failure = rows.get("pending"), rows.get("failure")
        return cls(index, as_str(d.get("uuid")), d.get("lost") is True,
                   as_str(d.get("error")), xids, as_int(rows.get("uncorrectable")),
                   pending if isinstance(pending, bool) else None,
                   failure if isinstance(failure, bool) else None,
                   as_int(pages.get("double_bit")), as_int(d.get("pcie_replay")))  # fmt: skip


@dataclass(frozen=True)
class Machine:
    """The probe's ``machine`` key. kB for memory (as /proc/meminfo), bytes for disks."""

    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    swap_total_kb: int | None = None
    swap_free_kb: int | None = None
    oom_kill: int | None = None
    disks: tuple[Disk, ...] = ()
    checkpoint: Checkpoint | None = None
    kernel_source: str | None = None  # "kmsg", or None: not readable (kernel_error says why)
    kernel_error: str | None = None
    kernel_xids: tuple[KernelLine, ...] = ()
    kernel_ooms: tuple[KernelLine, ...] = ()
    gpu_health: tuple[GpuHealth, ...] = ()
    xid_watch: str | None = None  # "nvml" when NVML's Xid events are watched, else why not

    @classmethod
    def from_dict(cls, d: Any) -> Machine | None:
        if not isinstance(d, dict):
            return None
        ck = d.get("checkpoint")
        ckpt = None
        if isinstance(ck, dict) and as_str(ck.get("path")):
            ckpt = Checkpoint(ck["path"], as_int(ck.get("step")), as_float(ck.get("mtime")),
                              as_int(ck.get("size_bytes")))  # fmt: skip
        kl = as_table(d.get("kernel_log"))
        nv = as_table(d.get("nvml"))
        return cls(
            as_int(d.get("mem_total_kb")), as_int(d.get("mem_available_kb")),
            as_int(d.get("swap_total_kb")), as_int(d.get("swap_free_kb")),
            as_int(d.get("oom_kill")),
            tuple(x for x in map(Disk.from_dict, as_dicts(d.get("disks"))) if x is not None),
            ckpt, as_str(kl.get("source")), as_str(kl.get("error")),
            tuple(KernelLine.from_dict(x) for x in as_dicts(kl.get("xids"))),
            tuple(KernelLine.from_dict(x) for x in as_dicts(kl.get("ooms"))),
            tuple(x for x in map(GpuHealth.from_dict, as_dicts(nv.get("gpus"))) if x is not None),
            as_str(nv.get("xid_watch")),
        )  # fmt: skip

    def disk(self, what: str) -> Disk | None:
        return next((x for x in self.disks if x.what == what), None)

    @cached_property
    def nvml_xids(self) -> tuple[tuple[int, int], ...]:
        """(GPU index, Xid code) of every NVML Xid event this sample brought, worked out once:
        each diagnosis reads every sample of its window. The record is frozen, so the value
        never goes stale; it is no field, so equality, hashing and ``replace`` do not see it
        (``copy`` and ``pickle`` carry it, equal to what it would be worked out again)."""
        return tuple((h.index, code) for h in self.gpu_health for _, code in h.xids)


@dataclass(frozen=True)
class Worker:
    """A pipeline worker's latest heartbeat (event ``worker``): ``state`` is ``work`` (busy on
    its own step since ``since``) or ``wait:<what>`` (blocked on a queue or the step barrier)."""

    role: str
    index: int
    gpu: int | None = None
    rank: int | None = None
    step: int | None = None
    queue: int | None = None
    state: str | None = None
    since: float | None = None
    time: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Worker | None:
        role, index = as_str(d.get("role")), as_int(d.get("index"))
        if role is None or index is None:
            return None
        return cls(role, index, as_int(d.get("gpu")), as_int(d.get("rank")), as_int(d.get("step")),
                   as_int(d.get("queue")), as_str(d.get("state")), as_float(d.get("since")),
                   as_float(d.get("time")))  # fmt: skip

    @property
    def name(self) -> str:
        rank = f"rank {self.rank} " if self.rank is not None else ""
        gpu = f" (GPU {self.gpu})" if self.gpu is not None else ""
        return f"{rank}{self.role} {self.index}{gpu}"


def workers_of(v: Any) -> tuple[Worker, ...]:
    return tuple(x for x in map(Worker.from_dict, as_dicts(v)) if x is not None)
