"""Host-side PID mapping: which container process holds a GPU.

Inside a container the driver reports HOST PIDs for GPU processes, while the probe (running in
the container) lists the container's own PIDs, so without help every GPU process would be
``unknown``. Where the SSH user can also run commands on the container's host (pct, docker, a
template run on that host), one short host-side command reads, for each unmapped GPU PID,
``/proc/PID/stat`` (start time), ``/proc/PID/status`` ``NSpid`` (the PID at every namespace
level, host first) and ``/proc/PID/cgroup``. A GPU process then gets ``container_pid`` when one
of its inner PIDs is in the probe's process table with the same start time (and, for pct, the
cgroup names that container). Whatever cannot be mapped stays ``unknown``, never orphan.

``map_gpu_procs`` is pure (snapshot + host rows -> snapshot); ``HostPidMapper`` runs the
host-side command through a transport's host side and caches what it learnt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.container import Container, parse
from dflash_tui.core.link.transport import LocalTransport, Transport, TransportError


@dataclass(frozen=True)
class HostProc:
    """What the host says about one of its PIDs."""

    pid: int
    nspid: tuple[int, ...] = ()  # host PID first, innermost namespace last
    start_ticks: int | None = None
    cgroup: str = ""


def host_sample_command(pids: Iterable[int]) -> str:
    """POSIX sh that prints tagged stat / NSpid / cgroup lines for each host PID."""
    ids = " ".join(str(p) for p in sorted({int(p) for p in pids}) if p > 0)
    return (
        f'for p in {ids}; do [ -d /proc/$p ] || continue; echo "P $p"; '
        'sed "s/^/S /" /proc/$p/stat 2>/dev/null; '
        'grep "^NSpid:" /proc/$p/status 2>/dev/null | sed "s/^/N /"; '
        'sed "s/^/C /" /proc/$p/cgroup 2>/dev/null; done'
    )


def _start_ticks(stat: str) -> int | None:
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@dataclass
class _Row:
    """One host PID's lines while they are read."""

    nspid: tuple[int, ...] = ()
    start: int | None = None
    cgroup: list[str] = field(default_factory=list)


def parse_host_sample(text: str) -> dict[int, HostProc]:
    rows: dict[int, _Row] = {}
    cur: _Row | None = None
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "P" and rest.strip().isdigit():
            cur = rows.setdefault(int(rest), _Row())
        elif cur is None:
            continue
        elif tag == "S":
            cur.start = _start_ticks(rest)
        elif tag == "N":
            cur.nspid = tuple(int(x) for x in rest.split()[1:] if x.isdigit())
        elif tag == "C":
            cur.cgroup.append(rest)
    return {pid: HostProc(pid, r.nspid, r.start, "\n".join(r.cgroup)) for pid, r in rows.items()}


def container_pid(hp: HostProc | None, snap: Snapshot, container: Container | None) -> int | None:
    """The PID, in the probe's process table, of the host process ``hp`` (None: not there)."""
    if hp is None or len(hp.nspid) < 2:
        return None  # unknown to the host, or not in a child PID namespace
    if container is not None and container.owns_cgroup(hp.cgroup) is False:
        return None
    for cand in hp.nspid[1:]:
        proc = snap.proc(cand)
        if proc is None:
            continue
        if hp.start_ticks is None or proc.start_ticks in (None, hp.start_ticks):
            return cand
    return None


def map_gpu_procs(
    snap: Snapshot, host: Mapping[int, HostProc], container: Container | None = None
) -> Snapshot:
    """``snap`` with ``container_pid`` set on every GPU process the host rows can place."""
    out, changed = [], False
    for gp in snap.gpu_procs:
        if gp.container_pid is None:
            cpid = container_pid(host.get(gp.pid), snap, container)
            if cpid is not None:
                gp, changed = replace(gp, container_pid=cpid), True
        out.append(gp)
    return replace(snap, gpu_procs=tuple(out)) if changed else snap


def unmapped(snap: Snapshot) -> list[int]:
    return [gp.pid for gp in snap.gpu_procs if gp.container_pid is None]


class HostPidMapper:
    """Applies the mapping to each snapshot of a containerised host; caches host rows by PID."""

    def __init__(self, host_side: Transport, container: Container | None) -> None:
        self.host_side, self.container = host_side, container
        self.cache: dict[int, HostProc] = {}
        self.error: str | None = None  # why the host side could not be read (last attempt)

    @classmethod
    def for_transport(cls, transport: Transport, container: str | None) -> HostPidMapper | None:
        """A mapper when the host has a container and its host side can be reached."""
        spec = parse(container)
        if spec is None:
            return None
        host_side = getattr(transport, "host_side", None)
        if callable(host_side):
            return cls(host_side(), spec)
        if isinstance(transport, LocalTransport):
            return cls(LocalTransport(), spec)
        return None

    async def apply(self, snap: Snapshot, timeout: float = 10.0) -> Snapshot:
        live = set(unmapped(snap))
        self.cache = {pid: hp for pid, hp in self.cache.items() if pid in live}
        todo = sorted(live - set(self.cache))
        if todo:
            try:
                res = await self.host_side.run(host_sample_command(todo), timeout=timeout)
            except TransportError as exc:  # not cached: asked again next sample
                self.error = f"host-side PID mapping unavailable: {exc}"
            else:
                found, self.error = parse_host_sample(res.stdout), None
                for pid in todo:  # a PID the host does not know is cached as such
                    self.cache[pid] = found.get(pid, HostProc(pid))
        mapped = map_gpu_procs(snap, self.cache, self.container)
        if self.error and self.error not in mapped.errors:
            mapped = replace(mapped, errors=(*mapped.errors, self.error))
        return mapped
