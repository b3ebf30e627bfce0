"""``dflash-tui status --watch``: one plain line per change, for logs and screen readers.

The live feed and diagnosis ``metrics`` uses (one probe per host, ``--interval`` apart) turn
each sample into the host's status document; each document is compared with the host's
previous one and every difference is one line: a finding that appeared or went, the run's
state (or run id) changing, the host going unreachable or coming back, and the step's progress
at most every ``--progress-every`` seconds. No colour, no cursor movement: every line goes
through base/text.py's terminal_safe. Ctrl-C (or SIGTERM) ends it with exit 0.

Each host is watched on its own (follow.py, as ``wait`` does): an exception while sampling
one host is that host's ``unreachable`` line, and the host is followed again after a growing
pause; the others go on.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from dflash_tui.cli.follow import FAILURE_CAP, follow_host
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.rundir import exit_text
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.link.fanout import MAX_OPENING
from dflash_tui.core.link.feed import Feed

PROGRESS_EVERY_S = 30.0


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


async def _watch_host(
    cfg: Config,
    host: HostConfig,
    progress_every: float,
    opening: asyncio.Semaphore,
    write: Callable[[str], None],
) -> None:
    """One host's lines, as long as the watch runs (follow.py: a failure while sampling
    it is its line, ``unreachable: HOST: why``, and it is followed again)."""
    watch, several = Watch(host.label, progress_every), len(cfg.hosts) > 1

    async def say(_feed: Feed, doc: dict[str, Any]) -> bool:
        print_lines(host.label, watch.lines(doc, time.monotonic()), several, write)
        return False

    await follow_host(host, cfg.interval, opening, say)


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
    done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for t in [waiter, *tasks]:
        t.cancel()
    await asyncio.gather(waiter, *tasks, return_exceptions=True)
    return _ended(done - {waiter})


def _ended(hosts_done: set[asyncio.Task[Any]]) -> int:
    """0 when stopped or when the reader left; 1, said on stderr, when a host's follow loop
    itself failed (a defect: its sampling errors are that host's lines)."""
    for t in hosts_done:
        exc = None if t.cancelled() else t.exception()
        if exc is None or isinstance(exc, BrokenPipeError):
            continue
        text = terminal_safe(f"dflash-tui status --watch: stopped: {type(exc).__name__}: {exc}")
        print(text[:FAILURE_CAP], file=sys.stderr)
        return 1
    return 0


def run_watch(cfg: Config, args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_watch(cfg, args.progress_every))
    except BrokenPipeError:  # `status --watch | head`: the reader left
        return 0
