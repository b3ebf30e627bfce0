"""The GPU process table's rows (pure; no Textual): one per process and GPU it holds, with what
the sample says of it (user, CPU %, RSS, elapsed from its start ticks, owner, command) and the
tree's ProcInfo, so ``K`` names and verifies it exactly as from the tree.

Values the sample lacks stay None (drawn as ``—``): a process the probe cannot see (another
container's, without PID mapping) has no user, CPU, RSS, start time or command here."""

from __future__ import annotations

from dataclasses import dataclass

from dflash_tui.app.host.procs.tree import ProcInfo, gpus_by_pid
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.views import Diagnosis

# Sort keys, in the order `o` cycles them (a header click picks one too).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("pid", "PID"),
    ("user", "USER"),
    ("gpu", "GPU"),
    ("mem", "GPU MEM"),
    ("cpu", "CPU%"),
    ("rss", "RSS"),
    ("elapsed", "ELAPSED"),
    ("owner", "OWNER"),
    ("command", "COMMAND"),
)


@dataclass(frozen=True)
class GpuProcRow:
    pid: int  # in the probe's view (as the tree and control name it)
    gpu: int
    used_mib: int | None
    user: str | None
    cpu_pct: float | None
    rss_kb: int | None
    elapsed_s: float | None
    owner: str
    command: str
    info: ProcInfo | None  # None: the probe does not see the process (K refuses it)

    @property
    def key(self) -> str:
        return f"{self.gpu}:{self.pid}"

    def sort_key(self, column: str) -> tuple[int, object]:
        """Unknown values last whichever the direction is asked of the caller's reverse."""
        value: object = {
            "pid": self.pid,
            "user": self.user,
            "gpu": self.gpu,
            "mem": self.used_mib,
            "cpu": self.cpu_pct,
            "rss": self.rss_kb,
            "elapsed": self.elapsed_s,
            "owner": self.owner,
            "command": self.command,
        }[column]
        return (0, value) if value is not None else (1, 0)

    def haystack(self) -> str:
        """What the filter box matches (case-insensitive substring)."""
        return f"{self.pid} {self.user or ''} gpu{self.gpu} {self.owner} {self.command}".lower()


def gpu_proc_rows(snap: Snapshot, diag: Diagnosis) -> list[GpuProcRow]:
    procs = {p.pid: p for p in snap.procs}
    run_pids = {p.pid for p in group_members(diag.run, snap.procs)}
    holders = gpus_by_pid(diag)
    rows = []
    for view in diag.gpus:
        for gp in view.processes:
            pid = gp.container_pid if gp.container_pid is not None else gp.pid
            p = procs.get(pid)
            info = None
            elapsed = None
            if p is not None:
                info = ProcInfo(
                    pid, p.pgid, p.start_ticks, p.cmd, p.state, p.user, pid in run_pids,
                    holders.get(pid, ()),
                )  # fmt: skip
                if p.start_ticks is not None and snap.boot_time is not None and snap.clk_tck:
                    elapsed = max(0.0, snap.time - snap.boot_time - p.start_ticks / snap.clk_tck)
            rows.append(
                GpuProcRow(
                    pid=pid,
                    gpu=view.index,
                    used_mib=gp.used_mib,
                    user=(p.user if p is not None else gp.user) or None,
                    cpu_pct=p.cpu_pct if p is not None else None,
                    rss_kb=p.rss_kb if p is not None else None,
                    elapsed_s=elapsed,
                    owner=gp.owner,
                    command=(p.cmd if p is not None and p.cmd else gp.cmd or gp.name),
                    info=info,
                )
            )
    return rows
