"""The supervisor's files in the run root, through a Transport (supervisor.sh does the work
where the run lives, so a supervisor on a bastion and one on the GPU host share this code).

The lock is ``<run_root>/.supervisor.lock/`` (mkdir: atomic on every filesystem we meet),
holding a random token and the owner (PID, host, start time). Every heartbeat rewrites
``supervisor.json`` only while the token is still ours; a supervisor that finds it gone was
replaced and must stop. ``supervisor.policy.json`` is a viewer's request, handed over once.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.control.script import ControlError, check_root
from dflash_tui.core.link.transport import Transport, TransportError

SCRIPT = Path(__file__).parent / "supervisor.sh"


@dataclass(frozen=True)
class Reply:
    # locked | held | lost | ok | inplace | unwritten | released | read | requested
    status: str
    token: str | None = None
    owner: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    now: float | None = None  # the clock where the run root is (``read``)
    why: str | None = None  # ``inplace``, ``unwritten``: why the record could not be written


def _json(text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def parse_reply(out: str) -> Reply:
    facts: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        facts.setdefault(key, value)
    if "error" in facts:
        raise ControlError(facts["error"])
    if "status" not in facts:
        raise ControlError(f"supervisor.sh said nothing understood: {out.strip()[-200:]!r}")
    if "end" not in facts:  # cut short: a policy line lost would lose a viewer's request
        raise ControlError(f"supervisor.sh's answer was cut short: {out.strip()[-200:]!r}")
    return Reply(
        status=facts["status"],
        token=facts.get("token"),
        owner=_json(facts["owner"]) if "owner" in facts else None,
        record=_json(facts["record"]) if "record" in facts else None,
        policy=_json(facts["policy"]) if "policy" in facts else None,
        now=float(facts["now"]) if facts.get("now", "").isdigit() else None,
        why=facts["why"][:300] if "why" in facts else None,
    )


RECORD_BLOCK = 4096  # a record is padded to whole blocks, with at least RECORD_SPARE to spare
RECORD_SPARE = 1024


def _one_line(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)  # json escapes newlines


def padded(doc: dict[str, Any]) -> str:
    """The record on one line, padded with spaces (JSON's whitespace) to whole blocks with
    room to spare: the file then always holds room for the next record, which supervisor.sh
    writes in place over it when the disk is full."""
    line = _one_line(doc)
    size = -(-(len(line) + 1 + RECORD_SPARE) // RECORD_BLOCK) * RECORD_BLOCK
    return line + " " * (size - len(line) - 1)


async def run(
    transport: Transport, verb: str, root: str, *args: str, timeout: float = 20.0
) -> Reply:
    words = (verb, check_root(root), *args)
    cmd = "sh -s -- " + " ".join(shlex.quote(w) for w in words)
    try:
        script = SCRIPT.read_bytes()
    except OSError as exc:
        raise ControlError(f"{SCRIPT} is missing ({exc.strerror}): reinstall") from None
    res = await transport.run(cmd, script, timeout)
    try:
        return parse_reply(res.stdout)
    except ControlError as exc:
        err = res.stderr.strip()[-300:]
        raise ControlError(f"{exc}{f' ({err})' if err else ''}") from None


async def lock(transport: Transport, root: str, token: str, owner: dict[str, Any]) -> Reply:
    return await run(transport, "lock", root, token, _one_line(owner))


async def take(
    transport: Transport, root: str, old: str, token: str, owner: dict[str, Any]
) -> Reply:
    return await run(transport, "take", root, old, token, _one_line(owner))


async def beat(transport: Transport, root: str, token: str, record: dict[str, Any]) -> Reply:
    return await run(transport, "beat", root, token, padded(record))


async def release(transport: Transport, root: str, token: str, record: dict[str, Any]) -> Reply:
    return await run(transport, "release", root, token, padded(record))


async def read(transport: Transport, root: str) -> Reply:
    return await run(transport, "read", root)


async def request_policy(
    transport: Transport, root: str, enabled: bool, by: str, at: float
) -> None:
    """Ask the supervisor of ``root`` to turn auto-restart on or off (it answers in its record)."""
    doc = {"enabled": enabled, "by": by, "requested_at": at}
    rep = await run(transport, "request", root, _one_line(doc))
    if rep.status != "requested":
        raise ControlError(f"the policy request was not written ({rep.status})")


async def live_supervisor(transport: Transport, root: str) -> SupervisorRecord | None:
    """The supervisor running for ``root`` now (its heartbeat fresh), or None; None too when
    the record cannot be read (the caller then goes on as if there were none)."""
    try:
        rep = await read(transport, root)
    except (ControlError, TransportError):
        return None
    rec = SupervisorRecord.from_dict(rep.record)
    now = rep.now if rep.now is not None else time.time()
    return rec if rec is not None and rec.live(now) else None
