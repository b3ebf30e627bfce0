"""What a diagnosis says, as plain records: per GPU its role, processes and labels, per log
whether it is there, and the findings. The rules that fill them live in diagnose.py and the
findings_* modules; these records sit apart so both sides can name them without importing each
other."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from dflash_train.topology import Topology
from dflash_tui.core.base.machine import Machine, Worker
from dflash_tui.core.base.rundir import ALIVE_STATES
from dflash_tui.core.base.snapshot import Gpu, RunRecord, StepEvent
from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.diagnosis.finding import Finding
from dflash_tui.core.diagnosis.thresholds import DEFAULT, Thresholds


@dataclass(frozen=True)
class Label:
    code: str
    since: float  # when this label started holding (sample time)
    # It held at the first sample there is: it began before ``since``, when is not known
    # (a duration is then written as at least: ``idle >= 10s``).
    at_least: bool = False


@dataclass(frozen=True)
class ProcView:
    pid: int
    container_pid: int | None
    name: str
    used_mib: int | None
    owner: str  # run | orphan | foreign | unknown
    cmd: str = ""
    # Why an orphan is one (see ownership.ORPHAN_EVIDENCE); "" for the other owners.
    evidence: str = ""
    left_by: str = ""  # the run an attributed orphan is left by ("run <id>", or its group)
    user: str = ""
    cpu_pct: float | None = None  # its CPU load: the order's second key (proc_order.py)


@dataclass(frozen=True)
class GpuView:
    index: int
    role: str  # target | drafter | unassigned
    gpu: Gpu | None  # None when the topology names a GPU the machine does not have
    processes: tuple[ProcView, ...]
    labels: tuple[Label, ...]
    # A process the probe cannot place (owner unknown: a container without PID mapping) holds
    # the GPU while no run of ours is alive: whatever it is, the GPU is not free for the run.
    unseen_holder: bool = False

    @functools.cached_property
    def codes(self) -> tuple[str, ...]:
        # Kept: the findings ask it of every GPU for every label code, every sample (the
        # record is frozen, its labels never change).
        return tuple(lb.code for lb in self.labels)

    @property
    def healthy(self) -> bool:
        return self.codes == ("ok",) and not self.unseen_holder


@dataclass(frozen=True)
class LogView:
    path: str
    exists: bool
    size: int | None
    missing_since: float | None  # first sample that saw it missing (None: exists or unknown)
    is_run_log: bool = False
    error: str | None = None
    missing_at_least: bool = False  # missing at the first sample there is: since is a bound


@dataclass(frozen=True)
class Diagnosis:
    time: float
    host: str
    topology: Topology
    run_state: str
    run: RunRecord | None
    gpus: tuple[GpuView, ...]
    logs: tuple[LogView, ...]
    findings: tuple[Finding, ...] = field(default=())
    telemetry_source: str = "none"
    telemetry_error: str | None = None  # why readings are missing (a hung nvidia-smi, ...)
    interval: float | None = None  # the probe's seconds between samples (None: one-shot)
    supervisor: SupervisorRecord | None = None  # the headless supervisor's record, if any
    last_step: StepEvent | None = None  # the run's event stream's last step, if any
    machine: Machine | None = None  # host memory, disks, kernel log, NVML health
    workers: tuple[Worker, ...] = ()  # each pipeline worker's latest heartbeat
    thresholds: Thresholds = DEFAULT  # what the findings were judged by (the strip's levels)

    def ready(self, index: int) -> bool | None:
        """Is GPU ``index`` fit for the run? None when it was not read (unknown, not
        unhealthy). Idle counts as fit while no run of ours is alive: it waits for one."""
        view = next((g for g in self.gpus if g.index == index), None)
        if view is None:
            return None
        idle_ok = view.codes == ("idle",) and self.run_state not in ALIVE_STATES
        return view.healthy or (idle_ok and not view.unseen_holder)

    def healthy(self, role: str) -> tuple[int, int]:
        """(healthy, expected) GPUs of a role (an unread one is not healthy: see ``unread``)."""
        want = self.role_gpus(role)
        return sum(1 for i in want if self.ready(i)), len(want)

    def unread(self, role: str) -> int:
        return sum(1 for i in self.role_gpus(role) if self.ready(i) is None)

    def role_gpus(self, role: str) -> tuple[int, ...]:
        return tuple(self.topology.target if role == "target" else self.topology.drafter)

    def health_level(self, role: str) -> str:
        """How ``health_text`` is coloured: ``ok`` (all fit), ``unknown`` (the rest were not
        read: unknown, not unhealthy) or ``bad`` (a GPU was read and is not fit)."""
        ok, want = self.healthy(role)
        if ok == want:
            return "ok"
        return "unknown" if ok + self.unread(role) == want else "bad"

    def health_text(self, role: str) -> str:
        """``5/5``; ``3/5 (2 unread)``; ``?/5 unread`` when none was read."""
        ok, want = self.healthy(role)
        unread = self.unread(role)
        if unread and unread == want:
            return f"?/{want} unread"
        return f"{ok}/{want}" + (f" ({unread} unread)" if unread else "")

    def worst(self) -> str | None:
        order = {"info": 0, "warning": 1, "error": 2}
        if not self.findings:
            return None
        return max(self.findings, key=lambda f: order[f.severity]).severity
