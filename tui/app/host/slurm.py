"""A host under Slurm (``scheduler = "slurm"``), as the app reads it: the login node's probe,
with Slurm's word on the run's job read after each of its samples (``SlurmWatch``); and one
host per node of the job (``[slurm] nodes``), each fed by the probe started inside the
allocation (tui/core/link/slurm_node.py) once the job runs there (``NodeSource``).

Slurm's word replaces the login node's own on the run: its state is the job's, and the run
findings the login node cannot judge (the job's processes are elsewhere) give way to Slurm's
findings (tui/core/control/slurm/findings.py), shown on the Slurm host's pane.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from dflash_tui.app.host.no_job import NO_JOB, NoJob
from dflash_tui.app.host.source import LiveSource, probe_feed
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control.slurm.findings import (
    KeptView,
    SchedulerView,
    slurm_job_text,
    with_view,
)
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.link.feed import Disconnected, FeedEvent
from dflash_tui.core.link.slurm_node import node_transport
from dflash_tui.core.link.transport import CommandResult, Transport, TransportError


class SlurmWatch(KeptView):
    """Slurm's latest word on the host's run: read after a sample of the login node when
    older than ``SLURM_REFRESH_S`` (a refresh key reads it afresh)."""

    def node(self, index: int) -> tuple[str, str] | None:
        """(job id, node) of the job's ``index``-th node while the job runs, else None."""
        job = self.view.job if self.view is not None else None
        if job is None or job.run_state != "running" or index >= len(job.nodes):
            return None
        return job.job_id, job.nodes[index]


class SlurmSource:
    """The login node's probe; Slurm is asked after each of its samples, before the sample
    is folded (``slurm_diagnosis`` then reads the watch), when its kept word is old."""

    def __init__(self, inner: LiveSource, watch: SlurmWatch) -> None:
        self.inner, self.watch = inner, watch

    async def events(self) -> AsyncIterator[FeedEvent]:
        async for ev in self.inner.events():
            if isinstance(ev, Snapshot):
                await self.watch.read()
            yield ev

    async def sample_now(self, last: Snapshot | None) -> Snapshot:
        snap = await self.inner.sample_now(last)
        await self.watch.read(fresh=True)
        return snap

    async def close(self) -> None:
        await self.inner.close()


class NodeSource:
    """Node ``index`` of the job: nothing while the job waits; once it runs, the probe inside
    the allocation on that node, until the job holds another node there (or none)."""

    def __init__(self, watch: SlurmWatch, host: HostConfig, index: int, interval: float) -> None:
        self.watch, self.host, self.index, self.interval = watch, host, index, interval

    async def events(self) -> AsyncIterator[FeedEvent | NoJob]:
        while True:
            target = self.watch.node(self.index)
            if target is None:
                yield NO_JOB  # nothing to probe: said as such, never as a link down
                await asyncio.sleep(self.interval)
                continue
            try:
                transport = node_transport(self.host, *target)
            except TransportError as exc:
                yield Disconnected(str(exc), self.interval)
                await asyncio.sleep(self.interval)
                continue
            try:
                async with contextlib.aclosing(
                    probe_feed(transport, self.host, self.interval).events()
                ) as feed:
                    async for ev in feed:
                        yield ev
                        if self.watch.node(self.index) != target:
                            break  # the job ended or moved: wait for its next nodes
            finally:
                await transport.close()

    async def close(self) -> None:
        pass  # each node's transport is closed with its stream


class NodeLink(Transport):
    """The transport to the node that node host ``index`` shows now: the job's nodes come and
    go with it, so each command goes to the node the job holds when it is sent (``K`` and the
    process menu act there); none while the job does not run there."""

    def __init__(self, watch: SlurmWatch, host: HostConfig, index: int) -> None:
        super().__init__()
        self.watch, self.host, self.index = watch, host, index
        self.label = f"{host.label}/node{index + 1}"
        self.links: dict[tuple[str, str], Transport] = {}  # (job id, node) -> its transport

    def now(self) -> Transport:
        target = self.watch.node(self.index)
        if target is None:
            raise TransportError(f"{self.label}: no node of the Slurm job runs here now")
        if target not in self.links:
            self.links[target] = node_transport(self.host, *target)
        return self.links[target]

    def stream(self, cmd: str, stdin: bytes | None = None) -> AsyncIterator[str]:
        return self.now().stream(cmd, stdin)

    async def run(
        self, cmd: str, stdin: bytes | None = None, timeout: float = 30.0
    ) -> CommandResult:
        return await self.now().run(cmd, stdin, timeout)

    async def close(self) -> None:
        links, self.links = list(self.links.values()), {}
        for link in links:
            await link.close()


def node_of(watch: SlurmWatch, index: int | None) -> str | None:
    """The name of the node host ``index`` shows (None: the Slurm host, or no node yet)."""
    if index is None:
        return None
    target = watch.node(index)
    return target[1] if target is not None else None


def slurm_diagnosis(diag: Diagnosis, view: SchedulerView | None, node: bool) -> Diagnosis:
    """``diag`` with Slurm's word on the run: the job's state, and (on the Slurm host, not
    on a node's) Slurm's findings in place of those the login node cannot judge."""
    return diag if view is None else with_view(diag, view, own=not node)


def slurm_job_line(view: SchedulerView | None, node: str | None = None) -> str | None:
    """The header's line of the job, as ``status`` words it, with the expected start of a
    queued job when Slurm knows one: ``Slurm job 12 PENDING (Resources), expected start
    ...``; on a node's host ``node n1 of Slurm job 12 RUNNING ...``."""
    if view is None:
        return None
    if view.error is not None:
        return "Slurm cannot be asked"
    job = view.job
    if job is None or not job.job_id:
        return "Slurm: no job submitted yet"
    text = slurm_job_text(job, start=True)
    return f"node {node} of {text}" if node else text
