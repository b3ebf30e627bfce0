"""``dflash-tui wait --until OUTCOME``: return as soon as the run reaches an outcome (exit 0)
or can no longer reach it (exit 1), or at ``--timeout`` (exit 124).

The same live feed and diagnosis as ``status --watch`` (watch.host_documents), on every
selected host at once (a job's members all): each document is judged by until.py. A run that
ended, or an error finding about the run, fails the wait at once, with the launcher's own error
or the log's last lines read from the run directory; a host unreachable for the feed's stall
time fails it too. One line says why (prefixed by the host with several), or ``--json`` prints
the status document(s) it ended on and the line goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from dflash_tui.cli.until import Until, verdict_on
from dflash_tui.cli.watch import host_documents
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.control.script import ControlError, fetch_run
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.local_feed import feed_for
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

    async def run(self, interval: float) -> HostWait:
        transport = make_transport(self.host)
        try:
            feed = feed_for(transport, self.host, interval)
            unreachable_since: float | None = None
            rechecks = 0
            async for doc in host_documents(self.host, transport, feed.events()):
                self.doc = doc
                self.verdict, self.line = verdict_on(doc, self.until)
                now = time.monotonic()
                if "error" not in doc:
                    unreachable_since = None
                else:
                    unreachable_since = unreachable_since or now
                    if now - unreachable_since >= feed.stall_timeout:
                        gone = now - unreachable_since
                        self.verdict = "failed"
                        self.line = f"{self.until} cannot be reached: {doc['error']} ({gone:.0f} s)"
                if self.verdict == "failed" and "error" not in doc:
                    settled, why = await _settled(transport, self.host, doc)
                    if not settled and rechecks < MAX_RECHECKS:
                        # a sample that straddled the job's end: the next one says
                        rechecks += 1
                        self.verdict = "pending"
                        continue
                    self.line += why
                if self.verdict != "pending":
                    return self
            return self
        finally:
            await transport.close()


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
    waits = [HostWait(h, until) for h in cfg.hosts]
    tasks = [asyncio.create_task(w.run(cfg.interval)) for w in waits]
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
