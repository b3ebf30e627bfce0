"""Per-host state: one feed, one Tracker, one Timeline and one transport (shared by the feed and
control, so one SSH connection per host) for every host of the config.

The app keeps one ``HostState`` per host for its whole life; switching the detailed view to
another host never drops a host's samples, logs or timeline (each host's pane keeps what
accumulates in its store, tui/app/host/store.py, and makes its widgets when first shown), and a
host whose link is down never holds up the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.host.source import EventSource, LiveSource
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import Config, HostConfig, JobConfig
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.diagnosis.job import MemberView
from dflash_tui.core.diagnosis.severity import run_chip, worst
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.timeline import Timeline
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.link.transport import Transport
from dflash_tui.core.record.recorder import Recorder
from dflash_tui.core.record.thread import RecordThread

if TYPE_CHECKING:  # the Slurm modules load with the first Slurm host (slurm_nodes)
    from dflash_tui.app.host.slurm import SlurmWatch

# Makes a host's run control from its transport, its config and its job (with the job's members).
MakeBridge = Callable[
    [Transport, HostConfig, "tuple[JobConfig, tuple[HostConfig, ...]] | None"], Any
]


class HostState:
    """Everything the app knows about one host; the widgets only draw what is kept here."""

    def __init__(
        self,
        index: int,
        key: str,
        cfg: HostConfig,
        source: EventSource | None = None,
        bridge: Any | None = None,
        make_bridge: MakeBridge | None = None,
        transport: Transport | None = None,
    ) -> None:
        """``bridge`` stands in for the host's run control; else ``make_bridge`` makes it
        on first use, on the host's one transport (tui/app/control/bridge.py): ``transport``,
        else the config's."""
        self.index, self.key, self.cfg = index, key, cfg
        self.source = source
        self.tracker = Tracker(cfg.topology, thresholds_for(cfg))
        self.timeline = Timeline()
        self.last: SampleReady | None = None
        self.samples = 0  # samples drawn for this host
        self.link = "connecting"  # connecting | connected | down | idle (no job on a node)
        self.link_error: str | None = None  # the error alone, without the countdown
        self.retry_at: float | None = None  # monotonic time of the feed's next attempt
        self.auto = "off"  # auto-restart (tui/app/control/autorestart.py): off | on | fatal
        self.auto_stop: asyncio.Event | None = None  # set to stop this host's supervisor
        self._transport: Transport | None = transport
        self._bridge = bridge
        self._make_bridge = make_bridge
        self.recorder: Recorder | None = None  # the flight recorder, on a live feed only
        self.records: RecordThread | None = None  # where it writes, off the loop
        # A job member (config `job = "..."`): the job and all its members' configs; the run
        # keys act on the whole job (tui/core/control/job.py).
        self.job: tuple[JobConfig, tuple[HostConfig, ...]] | None = None
        # Under Slurm: the watch of the job's word, and which node of the job this host shows
        # (None: the Slurm host itself, the login node); ``slurm_host`` is a node's Slurm
        # host, whose run control its keys use (tui/app/host/slurm.py).
        self.slurm: tuple[SlurmWatch, int | None] | None = None
        self.slurm_host: HostState | None = None
        # The overview's row of this host, with what it was made from (``summarize``).
        self.row: tuple[SampleReady | None, str, str, HostSummary] | None = None

    @property
    def owner(self) -> HostState:
        """The host whose run this one shows: a Slurm node's Slurm host (its run control acts
        there), else this host itself."""
        return self.slurm_host or self

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            from dflash_tui.core.link.connect import make_transport

            self._transport = make_transport(self.cfg)
        return self._transport

    @property
    def bridge(self) -> Any:
        if self._bridge is None:
            if self._make_bridge is None:
                raise RuntimeError(f"{self.key}: no run control was given")
            self._bridge = self._make_bridge(self.transport, self.cfg, self.job)
        return self._bridge

    def live_source(
        self,
        interval: float,
        record: RecordSettings | None = None,
        records: RecordThread | None = None,
        log: logging.Logger | None = None,
    ) -> EventSource:
        """The probe; with ``record``, the app records the host while no live headless
        supervisor holds its run root (the supervisor records it then), through ``records``
        (nothing without), saying on ``log`` what goes wrong with it."""
        if self.slurm is not None and self.slurm[1] is not None:  # a node of a Slurm job
            from dflash_tui.app.host.slurm import NodeSource

            return NodeSource(self.slurm[0], self.cfg, self.slurm[1], interval)
        if record is not None and record.enabled and records is not None:
            self.recorder, self.records = Recorder(self.cfg, record, "app", log), records
        source = LiveSource(self.transport, self.cfg, interval)
        if self.slurm is None:
            return source
        from dflash_tui.app.host.slurm import SlurmSource

        return SlurmSource(source, self.slurm[0])

    def node_name(self) -> str | None:
        """The node of a Slurm job this host shows, once the job runs there."""
        if self.slurm is None:
            return None
        from dflash_tui.app.host.slurm import node_of

        return node_of(self.slurm[0], self.slurm[1])

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self.last.diagnosis if self.last else None

    @property
    def snapshot(self) -> Snapshot | None:
        return self.last.snapshot if self.last else None

    def live_run(self) -> tuple[Snapshot, Diagnosis] | None:
        """The latest sample while its run is alive (starting or running), else None."""
        if self.last is None:
            return None
        diag = self.last.diagnosis
        if diag.run is None or diag.run_state not in ACTIVE:
            return None
        return self.last.snapshot, diag

    def fold(self, snap: Snapshot) -> SampleReady:
        """Tracker + Timeline, and the sample handed to the recorder."""
        diag = self.tracker.add(snap)
        line = None
        if self.slurm is not None:  # Slurm's word on the run (read just before this sample)
            from dflash_tui.app.host.slurm import slurm_diagnosis, slurm_job_line

            view, node = self.slurm[0].view, self.slurm[1]
            diag = slurm_diagnosis(diag, view, node is not None)
            line = slurm_job_line(view, self.node_name())
        events = tuple(self.timeline.fold(snap, diag))
        sup = diag.supervisor
        live_sup = sup is not None and sup.live(snap.time)  # it records the run, not us
        if self.recorder is not None and self.records is not None and not live_sup:
            self.records.add(self.recorder, snap, diag, events)
        metrics = tuple(self.tracker.metrics)[-200:]
        return SampleReady(self.key, snap, diag, self.tracker.progress, metrics, events, line)

    # -- the link --

    def link_up(self) -> None:
        self.link, self.link_error, self.retry_at = "connected", None, None

    def link_idle(self) -> None:
        """A Slurm node host whose job holds no node for it: no probe runs, none is due."""
        self.link, self.link_error, self.retry_at = "idle", None, None

    def link_down(self, error: str, retry_in: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.link, self.link_error, self.retry_at = "down", error, now + retry_in

    def retry_text(self, now: float | None = None, short: bool = False) -> str:
        """``retrying in 4s`` (counting down), ``retrying now`` once the wait is over;
        ``retry 4s`` / ``retry now`` when ``short``."""
        if self.retry_at is None:
            return ""
        left = self.retry_at - (time.monotonic() if now is None else now)
        word = "retry" if short else "retrying"
        if left < 0.5:
            return f"{word} now"
        return f"{word} {left:.0f}s" if short else f"{word} in {left:.0f}s"

    def link_text(self) -> str | None:
        """The link error with the countdown, None while the link is up."""
        if self.link != "down":
            return None
        return f"{self.link_error} ({self.retry_text()})"

    async def close(self) -> None:
        """Stop the probe and drop the connection (the run itself is never touched); the
        recorder is closed through ``records`` (``close_record``)."""
        if self.source is not None:
            await self.source.close()
        if self._transport is not None:
            await self._transport.close()

    def close_record(self) -> Future[None] | None:
        """The recorder's close queued after its samples in ``records``; None without."""
        if self.recorder is None or self.records is None:
            return None
        return self.records.close(self.recorder)


def shown_supervisor(state: HostState) -> SupervisorRecord | None:
    """The live headless supervisor of the host's run root, as its latest sample says."""
    diag = state.diagnosis
    sup = diag.supervisor if diag is not None else None
    return sup if sup is not None and diag is not None and sup.live(diag.time) else None


@dataclass(frozen=True)
class HostSummary:
    """One row of the overview."""

    key: str
    link: str
    link_note: str
    run_state: str
    run_id: str | None
    target: tuple[str, str] | None  # Diagnosis.health_text and health_level: ``?/5 unread``
    drafter: tuple[str, str] | None
    worst: str | None  # error | warning | info | None (no findings)
    worst_count: int
    findings: int
    chip: tuple[str, str] = ("?", "info")  # the state as shown, and its severity (run_chip)


def summarize(state: HostState) -> HostSummary:
    """The overview's row of ``state``; made again only once its sample, link or retry note
    changed (the overview asks for every host's row on each host's sample)."""
    note = state.retry_text(short=True) if state.link == "down" else ""
    row = state.row
    if row is not None and row[0] is state.last and row[1:3] == (state.link, note):
        return row[3]
    summary = _summary(state, note)
    state.row = (state.last, state.link, note, summary)
    return summary


def _summary(state: HostState, note: str) -> HostSummary:
    diag = state.diagnosis
    if diag is None:
        return HostSummary(state.key, state.link, note, "?", None, None, None, None, 0, 0)
    counts = Counter(f.severity for f in diag.findings)
    worst_level = worst(f.severity for f in diag.findings)
    node = state.node_name()
    return HostSummary(
        key=state.key if node is None else f"{state.key} {node}",
        link=state.link,
        link_note=note,
        run_state=diag.run_state,
        run_id=diag.run.id if diag.run else None,
        target=(diag.health_text("target"), diag.health_level("target")),
        drafter=(diag.health_text("drafter"), diag.health_level("drafter")),
        worst=worst_level,
        worst_count=counts[worst_level] if worst_level else 0,
        findings=len(diag.findings),
        chip=run_chip(diag.run_state, diag.run),
    )


def unique_keys(hosts: Sequence[HostConfig]) -> list[str]:
    """Host labels, made unique (``local``, ``local#2``): two hosts may share an address."""
    seen: Counter[str] = Counter()
    keys = []
    for h in hosts:
        seen[h.label] += 1
        keys.append(h.label if seen[h.label] == 1 else f"{h.label}#{seen[h.label]}")
    return keys


def make_hosts(
    cfg: Config,
    sources: Sequence[EventSource | None] = (),
    control: Any | None = None,
    make_bridge: MakeBridge | None = None,
) -> list[HostState]:
    """One state per configured host; ``sources`` (tests, replays) and ``control`` (a stand-in
    bridge) replace the live ones, the first host's ``control`` only; ``make_bridge`` makes
    each other host's run control. A Slurm host is followed by one host per node of its
    job (``[slurm] nodes``), named ``KEY/nodeN``, whose run keys act on the job."""
    states: list[HostState] = []
    for i, (key, h) in enumerate(zip(unique_keys(cfg.hosts), cfg.hosts, strict=True)):
        source = sources[i] if i < len(sources) else None
        bridge = control if i == 0 else None
        state = HostState(len(states), key, h, source, bridge, make_bridge)
        states.append(state)
        if h.scheduler == "slurm" and source is None:
            states += slurm_nodes(state, len(states), make_bridge)
    for job in cfg.jobs:
        members = tuple(h for h in cfg.hosts if h.job == job.name)
        if tuple(h.label for h in members) != job.members:
            continue  # not every member is shown (--host picked one): no job here
        for s in states:
            if s.cfg.job == job.name:
                s.job = (job, members)
    return states


def slurm_nodes(host: HostState, first: int, make: MakeBridge | None) -> list[HostState]:
    """The Slurm host ``host`` watches its job; one host per node of it follows, whose run
    keys act on the job (through ``host``) and whose process keys act on the node. The Slurm
    modules are imported here, and in the methods of a Slurm host, so that only a Slurm host
    loads them: the app starts without them for direct hosts."""
    from dflash_tui.app.host.slurm import NodeLink, SlurmWatch

    watch = SlurmWatch(host.transport, host.cfg)
    host.slurm = (watch, None)
    nodes = []
    for n in range(host.cfg.slurm.nodes):
        link = NodeLink(watch, host.cfg, n)  # K and the process menu act on the node
        node = HostState(first + n, f"{host.key}/node{n + 1}", host.cfg, None, None, make, link)
        node.slurm, node.slurm_host = (watch, n), host
        nodes.append(node)
    return nodes


def job_views(states: Sequence[HostState]) -> list[tuple[str, list[MemberView]]]:
    """Each job among ``states``, its members as the overview's job row shows them."""
    out: dict[str, list[MemberView]] = {}
    for s in states:
        if s.job is None:
            continue
        diag = s.diagnosis
        state = diag.run_state if diag is not None else "unknown"
        run_id = diag.run.id if diag is not None and diag.run else None
        out.setdefault(s.job[0].name, []).append(
            MemberView(s.key, state, run_id, s.tracker.progress.last_step)
        )
    return list(out.items())
