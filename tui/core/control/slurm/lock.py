"""The run root's launch lock for runs under Slurm: the one-live-run check and the submission
are two commands on the host, and of two launches at once only one may pass between them.

A directory ``ROOT/.slurm-launch`` made with mkdir (atomic, on NFS too) holds this launch's
token; it is removed only by its owner, and broken when older than STALE_S (a launcher that
died in between: the check and the submission take seconds).
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from dflash_tui.core.base.text import safe_label
from dflash_tui.core.control.script import ControlError, check_root
from dflash_tui.core.control.slurm.batch import ROOT_SH
from dflash_tui.core.link.transport import Transport, TransportError

NAME = ".slurm-launch"
STALE_S = 120
WAIT_S = 30

TAKE = (
    ROOT_SH
    + """mkdir -p "$r" || exit 3
l=$r/{name}
n=0
while ! mkdir "$l" 2>/dev/null; do
  t=$(date -r "$l" +%s 2>/dev/null) || continue
  if [ $(($(date +%s) - t)) -gt {stale} ]; then rm -rf "$l"; continue; fi
  n=$((n + 1))
  [ $n -lt {tries} ] || {{ cat "$l/owner" 2>/dev/null; exit 2; }}
  sleep 0.1
done
printf '%s\\n' {token} >"$l/owner"
"""
)
GIVE = (
    ROOT_SH
    + """l=$r/{name}
[ "$(cat "$l/owner" 2>/dev/null)" = {token} ] && rm -rf "$l"
exit 0
"""
)


@asynccontextmanager
async def launch_lock(transport: Transport, run_root: str) -> AsyncIterator[None]:
    """Hold the run root's launch lock (ControlError when another launch keeps it)."""
    token = secrets.token_hex(8)
    fields = {"root": shlex.quote(check_root(run_root)), "name": NAME, "token": token}
    res = await transport.run(
        TAKE.format(**fields, stale=STALE_S, tries=WAIT_S * 10), timeout=WAIT_S + 30
    )
    if res.rc == 2:
        raise ControlError(f"another launch of {run_root} is under way (its lock {NAME})")
    if res.rc:
        why = safe_label((res.stderr or res.stdout).strip()[-300:], 300)
        raise ControlError(f"cannot take the launch lock under {run_root}: {why}")
    try:
        yield
    finally:
        with contextlib.suppress(TransportError):  # else broken as stale by a later launch
            await transport.run(GIVE.format(**fields), timeout=30)
