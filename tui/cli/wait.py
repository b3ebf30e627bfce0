"""``dflash-tui wait --until OUTCOME``: return as soon as the run reaches an outcome (exit 0)
or can no longer reach it (exit 1), or at ``--timeout`` (exit 124).

The same live feed and diagnosis as ``status --watch`` (follow.py), on every selected host at
once (a job's members all): each document is judged by until.py. A run that ended, or an error
finding about the run, fails the wait at once, with the launcher's own error or the log's last
lines read from the run directory; a host unreachable for the feed's stall time fails it too.
An exception while sampling one host is noted on stderr and the host is followed again, as an
unreachable one (staying so for the stall time fails the wait). One line says why (prefixed by
the host with several), or ``--json`` prints the status document(s) it ended on and the line
goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dflash_tui.cli.follow import SAMPLING_FAILED, follow_host
from dflash_tui.cli.until import Until, verdict_on
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.control.script import ControlError, fetch_run
from dflash_tui.core.link.fanout import MAX_OPENING
from dflash_tui.core.link.feed import Feed
from dflash_tui.core.link.transport import Transport, TransportError

TIMED_OUT = 124  # as timeout(1)
LOG_LINES = 3  # of the run's log, quoted when the run failed
LINE_CAP = 200  # characters of each quoted log line
MAX_RECHECKS = 3  # samples that disagree with the run directory read again, then believed


@dataclass
class HostWait:
    """One host's wait: its latest document and the sentence about it."""

    host: HostConfig
    until: Until
    doc: dict[str, Any] = field(default_factory=dict)
    line: str = "no sample yet"
    verdict: str = "pending"
    unreachable_since: float | None = None
    rechecks: int = 0
    note: Callable[[str], None] = field(default=lambda _: None, repr=False)

    async def run(self, interval: float, opening: asyncio.Semaphore) -> HostWait:
        """Follow the host until a verdict (follow.py: an exception while sampling it is
        noted, and the host is followed again, as an unreachable one)."""
        await follow_host(self.host, interval, opening, self.take)
        return self

    async def take(self, feed: Feed, doc: dict[str, Any]) -> bool:
        """Judge one document; True once the wait on this host has its verdict."""
        self.doc = doc
        self.verdict, self.line = verdict_on(doc, self.until)
        if "error" in doc:
            return self._unreachable(doc["error"], feed.stall_timeout)
        self.unreachable_since = None
        if self.verdict == "failed":
            settled, why = await _settled(feed.transport, self.host, doc)
            if not settled and self.rechecks < MAX_RECHECKS:
                # a sample that straddled the job's end: the next one says
                self.rechecks += 1
                self.verdict = "pending"
                return False
            self.line += why
        return self.verdict != "pending"

    def _unreachable(self, error: str, stall_timeout: float) -> bool:
        """An unreachable host fails the wait once it stayed so for the stall time."""
        now = time.monotonic()
        if self.unreachable_since is None:
            self.unreachable_since = now
        if SAMPLING_FAILED in error:  # a bug or a hostile sample, not a network: say it now
            self.note(f"{error}; trying again")  # the error names the host
        gone = now - self.unreachable_since
        if gone < stall_timeout:
            return False
        self.verdict = "failed"
        self.line = f"{self.until} cannot be reached: {error} ({gone:.0f} s)"
        return True


async def _settled(transport: Transport, host: HostConfig, doc: dict[str, Any]) -> tuple[bool, str]:
    """Read the run again: does it still say what failed the wait (a sample taken as the job
    ended can see its group gone before its exit code is written)? Its scheduler says (under
    Slurm the job's state, scheduled.latest_run). And the launcher's error, else the log's
    last lines, for the reason."""
    run = doc["run"]
    if not run.get("id"):
        return True, ""
    try:
        rep = await fetch_run(transport, host.run_root, run["id"], log_lines=LOG_LINES)
        now = rep
        if host.scheduler == "slurm":  # the run is its job: the login node sees none of it
            from dflash_tui.core.control.scheduled import latest_run

            now = await latest_run(transport, host)
    except (ControlError, TransportError):
        return True, ""
    rec = now.record
    if rec is None:
        return True, ""
    if (now.state(), rec.exit_code) != (run.get("state"), run.get("exit_code")):
        return False, ""
    if rec.launch_error:
        return True, f"; launcher: {rec.launch_error}"
    tail = [ln.strip()[:LINE_CAP] for ln in rep.log_tail[-LOG_LINES:] if ln.strip()]
    return True, f"; log: {' | '.join(tail)}" if tail else ""


def _note(text: str) -> None:
    """A line on stderr while the wait goes on: stdout keeps the one line (or the JSON)."""
    print(terminal_safe(text.replace("\n", " ")), file=sys.stderr, flush=True)


def _say(waits: list[HostWait], as_json: bool, prefix: str = "") -> None:
    several = len(waits) > 1
    out = sys.stderr if as_json else sys.stdout
    for w in waits:
        label = f"{w.host.label}: " if several else ""
        line = f"{prefix}{label}{w.line}".replace("\n", " ")  # one reason, one line
        print(terminal_safe(line), file=out, flush=True)
    if as_json:
        docs = [w.doc for w in waits]
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")


async def _wait(cfg: Config, until: Until, timeout: float | None, as_json: bool) -> int:
    waits = [HostWait(h, until, note=_note) for h in cfg.hosts]
    opening = asyncio.Semaphore(MAX_OPENING)
    tasks = [asyncio.create_task(w.run(cfg.interval, opening)) for w in waits]
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        pending = set(tasks)
        while pending:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            done, pending = await asyncio.wait(
                pending, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:  # the deadline
                _say(waits, as_json, f"timed out after {timeout:g} s: ")
                return TIMED_OUT
            failed = [t.result() for t in done if t.result().verdict != "reached"]
            if failed:
                _say(failed, as_json)
                return 1
        _say(waits, as_json)
        return 0
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_wait(cfg: Config, args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_wait(cfg, args.until, args.timeout, args.json))
    except KeyboardInterrupt:
        return 130
