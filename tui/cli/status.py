"""``dflash-tui status``: one sample per host, diagnosed, as JSON or a table.

This machine (no container, no DFLASH_TUI_PYTHON) is sampled inside this process
(core/link/local_probe.py) instead of by a second interpreter, and that sample is started
before the diagnosis is imported, so that the GPU tools run meanwhile. Other hosts go through
their transports: asyncio (and asyncssh for SSH) are imported only when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.link.errors import TransportError
from dflash_tui.core.link.local_probe import LocalSample, in_process

if TYPE_CHECKING:
    from dflash_tui.core.base.snapshot import Snapshot
    from dflash_tui.core.link.transport import Transport

_RANK = {"info": 0, "warning": 1, "error": 2}
Result = tuple[dict[str, Any], list[Any]]  # a host's document, and its table's parts


def collect(
    hosts: Sequence[HostConfig], table: bool, local: dict[int, LocalSample]
) -> list[Result]:
    """Every host's document (and table parts), in the hosts' order; ``local`` holds the
    samples of this machine already started (by index), the others are sampled here."""
    # Imported only now: this machine's sample is already under way in its thread.
    from dflash_tui.cli.status_doc import host_document, unreachable

    out: dict[int, Result] = {}
    others = [i for i in range(len(hosts)) if i not in local]
    if others:
        import asyncio

        out.update(
            zip(others, asyncio.run(_gather([hosts[i] for i in others], table)), strict=True)
        )
    scheduled: list[tuple[int, Snapshot]] = []  # this machine's samples of a Slurm host
    for i, sample in local.items():
        try:
            snap = sample.result()
        except TransportError as exc:
            out[i] = unreachable(hosts[i], str(exc)), []
            continue
        if hosts[i].scheduler == "slurm":
            scheduled.append((i, snap))
        else:
            out[i] = host_document(hosts[i], snap, table)
    if scheduled:
        import asyncio

        done = asyncio.run(_here([(hosts[i], snap) for i, snap in scheduled], table))
        out.update(zip([i for i, _ in scheduled], done, strict=True))
    return [out[i] for i in range(len(hosts))]


async def _here(samples: list[tuple[HostConfig, Snapshot]], table: bool) -> list[Result]:
    """This machine's Slurm hosts, sampled in this process: Slurm's word on each, at once."""
    from dflash_tui.core.link.connect import make_transport
    from dflash_tui.core.link.fanout import each_host

    async def one(item: tuple[HostConfig, Snapshot]) -> Result:
        host, snap = item
        transport = make_transport(host)
        try:
            return await _document(transport, host, snap, table)
        finally:
            await transport.close()

    return await each_host(samples, one)


async def _document(transport: Transport, host: HostConfig, snap: Snapshot, table: bool) -> Result:
    """The host's document and table parts; a Slurm host's with Slurm's word, read on the
    host's transport, put in before either is made (both say the job's state), its lines
    first in the table, and each node of a running job sampled."""
    from dflash_tui.cli.status_doc import host_document

    if host.scheduler != "slurm":
        return host_document(host, snap, table)
    from dflash_tui.core.control.slurm.findings import lines, read_view

    view = await read_view(transport, host)
    doc, parts = host_document(host, snap, table, view)
    if view.job is not None and view.job.run_state == "running":
        doc["nodes"] = await _nodes(host, view.job.job_id, view.job.nodes)
    if table:  # Slurm's words (its reasons, node names) are made safe as every host's
        from rich.text import Text

        parts = [Text(terminal_safe(text)) for text in lines(view)] + parts
    return doc, parts


async def _nodes(host: HostConfig, job_id: str, nodes: Sequence[str]) -> list[dict[str, Any]]:
    """Each node of a running job sampled by the probe inside the allocation: its document."""
    import asyncio
    from dataclasses import replace

    from dflash_tui.cli.status_doc import host_document, unreachable
    from dflash_tui.core.link.feed import sample_once
    from dflash_tui.core.link.slurm_node import node_transport

    async def one(node: str) -> dict[str, Any]:
        as_host = replace(host, name=node, address=None, scheduler="direct")
        try:
            transport = node_transport(host, job_id, node)
            try:
                snap = await sample_once(transport, host)
            finally:
                await transport.close()
        except TransportError as exc:
            return unreachable(as_host, str(exc))
        return host_document(as_host, snap, False)[0]

    return list(await asyncio.gather(*(one(n) for n in nodes[:64])))


async def _gather(hosts: list[HostConfig], table: bool) -> list[Result]:
    """Every host at once (core/link/fanout.py), each within its own connect and sample
    timeouts: an unreachable host is reported as such without holding up the others."""
    from dflash_tui.cli.status_doc import unreachable
    from dflash_tui.core.link.connect import make_transport
    from dflash_tui.core.link.fanout import each_host
    from dflash_tui.core.link.feed import sample_once

    async def one(h: HostConfig) -> Result:
        try:
            transport = make_transport(h)
            try:
                snap = await sample_once(transport, h)
                return await _document(transport, h, snap, table)
            finally:
                await transport.close()
        except TransportError as exc:
            return unreachable(h, str(exc)), []

    return await each_host(hosts, one)


def run_status(cfg: Config, args: argparse.Namespace) -> int:
    if args.openmetrics:
        from dflash_tui.cli.metrics import openmetrics_module

        if openmetrics_module() is None:
            return 1
    local = {i: LocalSample(h) for i, h in enumerate(cfg.hosts) if in_process(h)}
    results = collect(cfg.hosts, not (args.json or args.openmetrics), local)
    docs = [doc for doc, _ in results]
    from dflash_tui.cli.status_doc import mark_job

    line = mark_job(cfg, docs)
    if args.openmetrics:  # node_exporter's textfile collector, or a one-off look
        from dflash_tui.core.export.openmetrics import exposition

        sys.stdout.write(exposition(docs, time.time()).decode())
    elif args.json:
        out = docs[0] if len(docs) == 1 else docs
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from rich.console import Console

        # Piped output gets a wide console so paths and messages are not cut mid-word.
        console = Console(width=None if sys.stdout.isatty() else 200)
        if line:  # run ids and labels are the hosts' and the config's: made safe
            console.print(terminal_safe(line), markup=False, highlight=False)
        for doc, parts in results:  # a Slurm host's parts start with the job's lines
            if not parts:
                # The error names the host and quotes its or the container runtime's words.
                console.print(terminal_safe(str(doc.get("error"))), markup=False)
            for part in parts:
                console.print(part)
    failing = any("error" in d for d in docs)
    if args.fail_on:
        worst = max((_RANK[f["severity"]] for d in docs for f in d["findings"]), default=-1)
        failing = failing or worst >= _RANK[args.fail_on]
    rc = 1 if failing else 0
    if any(sample.thread.is_alive() for sample in local.values()):
        # A sample given up at its timeout is still inside a hung call (a log mount, the GPU
        # driver's library). The subprocess probe was killed; a thread cannot be, and the
        # interpreter's exit could wait on a lock it holds: leave without that exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc
