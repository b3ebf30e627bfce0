"""``dflash-tui status --watch``: one plain line per change, for logs and screen readers.

The live feed and diagnosis ``metrics`` uses (one probe per host, ``--interval`` apart) turn
each sample into the host's status document; each document is compared with the host's
previous one and every difference is one line: a finding that appeared or went, the run's
state (or run id) changing, the host going unreachable or coming back, and the step's progress
at most every ``--progress-every`` seconds. No colour, no cursor movement: every line goes
through base/text.py's terminal_safe. Ctrl-C (or SIGTERM) ends it with exit 0.

Each host is watched on its own: an exception while sampling one host is that host's
``unreachable`` line, and the host is followed again after a growing pause; the others go on.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from dflash_tui.cli.status_doc import status_doc, unreachable
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.rundir import exit_text
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.fanout import MAX_OPENING, opened_under
from dflash_tui.core.link.feed import Disconnected, FeedEvent
from dflash_tui.core.link.local_feed import feed_for

if TYPE_CHECKING:  # the Slurm modules load only for a Slurm host
    from dflash_tui.core.control.slurm.findings import KeptView
from dflash_tui.core.link.transport import Transport

PROGRESS_EVERY_S = 30.0
FAILURE_CAP = 300  # characters of an exception's text in a host's line
RETRY_FIRST_S, RETRY_MAX_S = 1.0, 30.0  # pauses before a failed host is followed again


def _finding_key(f: dict[str, Any]) -> tuple[str, tuple[int, ...]]:
    return f["code"], tuple(f.get("gpus") or ())


def _gpus(f: dict[str, Any]) -> str:
    gpus = f.get("gpus") or []
    return f" GPU {','.join(str(g) for g in gpus)}" if gpus else ""


def _run_line(run: dict[str, Any]) -> str:
    parts = [f"run {run.get('state')}"]
    if run.get("id"):
        parts.append(str(run["id"]))
    if isinstance(run.get("exit_code"), int):
        parts.append(exit_text(run["exit_code"]))
    return " ".join(parts)


def _progress_line(p: dict[str, Any]) -> str:
    parts = [f"step {p.get('step')}"]
    if p.get("loss") is not None:
        parts.append(f"loss {p['loss']:.4g}")
    elif p.get("loss_finite") is False:
        parts.append("loss not finite")
    if p.get("tok_s") is not None:
        parts.append(f"tok/s {p['tok_s']:.0f}")
    return " ".join(parts)


class Watch:
    """One host's previous document and when its progress was last said."""

    def __init__(self, label: str, progress_every: float) -> None:
        self.label, self.progress_every = label, progress_every
        self.prev: dict[str, Any] | None = None
        self.progress_at = -1e18
        self.progress_step: object = None

    def lines(self, doc: dict[str, Any], now: float) -> list[str]:
        """What changed since the previous document, one plain sentence each."""
        prev, out = self.prev, []
        self.prev = doc
        if "error" in doc:
            if prev is None or prev.get("error") != doc["error"]:
                out.append(f"unreachable: {doc['error']}")
            return out
        if prev is not None and "error" in prev:
            out.append("reachable again")
            prev = None  # say everything afresh
        if prev is None or _run_line(prev["run"]) != _run_line(doc["run"]):
            out.append(_run_line(doc["run"]))
        old = {_finding_key(f): f for f in (prev or {}).get("findings", [])}
        new = {_finding_key(f): f for f in doc.get("findings", [])}
        for key, f in new.items():
            if key not in old or old[key]["severity"] != f["severity"]:
                out.append(f"finding {f['severity'].upper()} {f['code']}{_gpus(f)}: {f['message']}")
        for key, f in old.items():
            if key not in new:
                out.append(f"finding gone {f['code']}{_gpus(f)}")
        progress = doc.get("progress")
        moved = progress and progress.get("step") != self.progress_step
        if moved and now - self.progress_at >= self.progress_every:
            assert progress is not None
            self.progress_at, self.progress_step = now, progress.get("step")
            out.append(_progress_line(progress))
        return out


def print_lines(label: str, lines: list[str], several: bool, write: Callable[[str], None]) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    where = f" {label}" if several else ""
    for line in lines:
        # one change, one line: a message's own newlines would split it
        write(terminal_safe(f"{stamp}{where} {line}".replace("\n", " ")) + "\n")


async def host_documents(
    host: HostConfig, transport: Transport, events: AsyncIterator[FeedEvent]
) -> AsyncIterator[dict[str, Any]]:
    """The host's status document at every sample of its live feed's ``events``, and an
    unreachable host's document whenever the feed loses it (the feed reconnects by itself).
    ``status --watch`` and ``wait`` read the same stream. Under Slurm the run is its job, as
    Slurm says it, through the same transport (the login node), read again at most every
    ``SLURM_REFRESH_S`` (tui/core/control/slurm/findings.py)."""
    tracker = Tracker(host.topology, thresholds_for(host))
    kept = kept_view(host, transport)
    async for ev in events:
        if isinstance(ev, Snapshot):
            view = await kept.read() if kept is not None else None
            yield status_doc(host, tracker, ev, view)[0]
        elif isinstance(ev, Disconnected):
            yield unreachable(host, ev.error)


def kept_view(host: HostConfig, transport: Transport) -> KeptView | None:
    """Slurm's kept word on a Slurm host's run; None for a direct host (the Slurm modules
    are imported only for a Slurm host)."""
    if host.scheduler != "slurm":
        return None
    from dflash_tui.core.control.slurm.findings import KeptView

    return KeptView(transport, host)


def _failure(exc: Exception) -> str:
    """One host's sampling that raised, in a line of its own (the host is named by
    ``unreachable``, every line made safe by ``print_lines``); capped, as any hostile text."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"sampling failed: {text[:FAILURE_CAP]}"


async def _follow(
    cfg: Config, host: HostConfig, opening: asyncio.Semaphore, say: Callable[[dict[str, Any]], None]
) -> None:
    """One connection's documents of ``host``, each given to ``say``, until its feed ends."""
    transport = make_transport(host)
    try:
        events = opened_under(opening, feed_for(transport, host, cfg.interval).events())
        async for doc in host_documents(host, transport, events):
            say(doc)
    finally:
        await transport.close()


async def _watch_host(
    cfg: Config,
    host: HostConfig,
    progress_every: float,
    opening: asyncio.Semaphore,
    write: Callable[[str], None],
) -> None:
    """One host's lines; its connection and first sample wait for one of ``opening``'s slots
    (core/link/fanout.py), so every host opens concurrently, a bounded number at a time.
    Whatever ends this host's documents (an exception while sampling it, its feed ending) is
    this host's line, ``unreachable: HOST: why``, and it is followed again after a growing
    pause: the other hosts' lines go on meanwhile."""
    watch, several = Watch(host.label, progress_every), len(cfg.hosts) > 1
    backoff = [RETRY_FIRST_S]

    def say(doc: dict[str, Any]) -> None:
        if "error" not in doc:
            backoff[0] = RETRY_FIRST_S
        print_lines(host.label, watch.lines(doc, time.monotonic()), several, write)

    while True:
        try:
            await _follow(cfg, host, opening, say)
            why = "its feed ended"
        except BrokenPipeError:  # the reader left (`status --watch | head`): the watch ends
            raise
        except Exception as exc:  # one host's failure is its own line, not the watch's end
            why = _failure(exc)
        say(unreachable(host, why))
        await asyncio.sleep(backoff[0])
        backoff[0] = min(backoff[0] * 2, RETRY_MAX_S)


def _stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


async def _watch(cfg: Config, progress_every: float) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    opening = asyncio.Semaphore(MAX_OPENING)
    tasks = [
        asyncio.create_task(_watch_host(cfg, h, progress_every, opening, _stdout))
        for h in cfg.hosts
    ]
    waiter = asyncio.create_task(stop.wait())
    # A host's task ends only when the reader left (a BrokenPipeError) or on what is not an
    # Exception: the watch ends with it, as it does when stopped.
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for t in [waiter, *tasks]:
        t.cancel()
    await asyncio.gather(waiter, *tasks, return_exceptions=True)
    return 0


def run_watch(cfg: Config, args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_watch(cfg, args.progress_every))
    except BrokenPipeError:  # `status --watch | head`: the reader left
        return 0
