"""The process menu's helpers on the host: which are on its PATH (control.sh ``tools``), and
``py-spy dump`` of one process (``pid-dump``), verified as a signal is: the start time must
still match, and PID 1, kernel threads and the chain that carries us are refused.

Both run through control.sh like every other control verb (one script over any transport:
locally, over SSH, inside a container, where ``command -v`` looks on that side's PATH); the
PID and start time reach the shell as quoted words, never inside a command string.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from dflash_tui.core.control.pid import local_refusal
from dflash_tui.core.control.script import ControlError, _script
from dflash_tui.core.link.transport import Transport

DUMP_TIMEOUT_S = 60.0  # py-spy attaches and walks every thread: seconds on a busy host


@dataclass(frozen=True)
class DumpResult:
    ok: bool
    message: str
    lines: tuple[str, ...] = ()  # py-spy's own output (not terminal-safe: outside bytes)
    refused: bool = False


async def _verb(transport: Transport, timeout: float, *words: str) -> list[str]:
    cmd = "sh -s -- " + " ".join(shlex.quote(w) for w in words)
    res = await transport.run(cmd, _script(), timeout)
    lines = res.stdout.splitlines()
    if not lines or lines[-1] != "end":  # cut short: no answer of control.sh's
        err = res.stderr.strip()[-200:] or "no error text"
        raise ControlError(
            f"{words[0]} on {transport.label}: no whole answer (exit {res.rc}): {err}"
        )
    return lines[:-1]


async def host_tools(transport: Transport) -> dict[str, str]:
    """Tool name -> its path on the host, for the helpers control.sh looks for (py-spy)."""
    tools = {}
    for line in await _verb(transport, 30.0, "tools"):
        words = line.split(" ", 2)
        if len(words) == 3 and words[0] == "tool":
            tools[words[1]] = words[2]
    return tools


async def dump(transport: Transport, *, pid: int, start_ticks: int) -> DumpResult:
    """``py-spy dump --pid PID`` on the host, once the PID is verified."""
    why = local_refusal(transport, pid)
    if why is not None:
        return DumpResult(False, f"refused: {why}; nothing run", refused=True)
    lines = await _verb(transport, DUMP_TIMEOUT_S, "pid-dump", str(pid), str(start_ticks))
    out = tuple(x[5:] if x.startswith("dump ") else "" for x in lines if x.startswith("dump"))
    verdict, _, detail = (lines[-1] if lines else "pid_error no answer").partition(" ")
    if verdict == "pid_dumped":
        rc = detail.rsplit(" ", 1)[-1]
        if rc == "0":
            return DumpResult(True, f"py-spy dump of PID {pid}", out)
        return DumpResult(False, f"py-spy failed on PID {pid} (exit {rc})", out)
    if verdict == "pid_gone":
        return DumpResult(False, f"PID {pid} is gone")
    if verdict == "pid_reused":
        msg = f"PID {pid} now belongs to another process (start time differs): nothing run"
        return DumpResult(False, msg, refused=True)
    if verdict == "pid_refused":
        return DumpResult(False, f"refused: {detail}; nothing run", refused=True)
    return DumpResult(False, f"PID {pid}: {detail or verdict}")
