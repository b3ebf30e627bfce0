"""After a lost link, read the run again over a new connection.

A launch whose SSH link drops half-way does not know whether its job started: control.sh may
have made the run directory and started the job before the link went. Rather than report
"connection lost" while the job runs, the launcher reads the run again (the transport opens a
new connection for the next command), retrying for a while, and reports what is true.
"""

from __future__ import annotations

import asyncio
import time

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.control.script import ProgressFn, emit, fetch_run
from dflash_tui.core.link.transport import Transport, TransportError

RELINK_S = 30.0  # how long to try to reconnect before saying the run's state is unknown
SLACK_S = 2.0  # a run started this long before we sent the launch is not ours


async def reread(
    transport: Transport,
    host: HostConfig,
    run_id: str | None,
    lost: TransportError,
    *,
    retry_for: float = RELINK_S,
    progress: ProgressFn | None = None,
) -> RunReport:
    """``fetch_run`` again until it answers; raises TransportError after ``retry_for`` s,
    saying that the run's state is unknown and how to look."""
    t0, delay, last = time.monotonic(), 0.5, lost
    while True:
        emit(progress, "reconnecting", f"link lost ({last}): reading the run again", t0, retry_for)
        try:
            return await fetch_run(transport, host.run_root, run_id)
        except TransportError as exc:
            last = exc
        if time.monotonic() - t0 + delay > retry_for:
            raise TransportError(
                f"{lost}; no new connection within {retry_for:g} s, so whether the job started "
                f"is unknown: look with `dflash-tui status` once the host answers"
            ) from None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 4.0)


async def fetch(
    transport: Transport,
    host: HostConfig,
    run_id: str | None,
    *,
    log_lines: int = 0,
    progress: ProgressFn | None = None,
) -> RunReport:
    """``fetch_run`` that survives a lost link (see ``reread``)."""
    try:
        return await fetch_run(transport, host.run_root, run_id, log_lines)
    except TransportError as exc:
        rep = await reread(transport, host, run_id, exc, progress=progress)
        return await fetch_run(transport, host.run_root, run_id, log_lines) if log_lines else rep


def started_since(rep: RunReport, elapsed: float) -> bool | None:
    """Whether the latest run was started within the last ``elapsed`` seconds of the host's
    own clock (so by the launch whose link was lost); None when the host gave no clock."""
    rec = rep.record
    if rec is None:
        return False
    if rep.now is None or rec.started_at is None:
        return None
    return rec.started_at >= rep.now - elapsed - SLACK_S
