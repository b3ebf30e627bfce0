"""A log out of the app: save what a tail shows as plain text (``S``), or open the whole file
in ``$PAGER`` (``v``) with the app suspended.

The pager never gets raw bytes: the file is read over the host's own transport (local, SSH,
container), bounded to its last ``PAGER_MAX_BYTES``, each line made terminal-safe
(base/text.py ``clean_line``) into a private temp copy, and that copy is what the pager opens.
So a hostile line cannot drive the terminal, whatever ``$PAGER`` or ``$LESS`` say (``-R``)."""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from dflash_tui.core.base.paths import state_dir
from dflash_tui.core.base.text import clean_line, safe_label
from dflash_tui.core.link.transport import Transport

PAGER_MAX_BYTES = 64 * 1024 * 1024  # the end of a bigger log is what is read
READ_TIMEOUT_S = 60.0


def saved_dir() -> Path:
    """``saved/`` in the state folder (paths.py; on Linux ``~/.local/state/dflash-tui``)."""
    return state_dir() / "saved"


def save_lines(lines: Iterable[str], log_path: str, where: Path | None = None) -> Path:
    """Write ``lines`` (already sanitised: the Log's) to a new file named after the log and
    the time; returns its path."""
    where = where or saved_dir()
    where.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(log_path).name)[:80]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = where / f"{name or 'log'}-{stamp}.txt"
    n = 1
    while out.exists():
        n += 1
        out = where / f"{name or 'log'}-{stamp}-{n}.txt"
    out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return out


async def fetch_clean_copy(transport: Transport, log_path: str) -> Path:
    """The log's last PAGER_MAX_BYTES, read over ``transport``, cleaned line by line into a
    private temp file (mode 600); the caller removes it."""
    cmd = f"tail -c {PAGER_MAX_BYTES} -- {shlex.quote(log_path)}"
    res = await transport.run(cmd, timeout=READ_TIMEOUT_S)
    if not res.ok:
        raise OSError(safe_label(res.stderr.strip() or f"tail exited {res.rc}", 300))
    fd, name = tempfile.mkstemp(prefix="dflash-tui-log-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for line in res.stdout.splitlines():
            f.write(clean_line(line) + "\n")
    return Path(name)


def pager_argv(path: Path) -> list[str]:
    """``$PAGER`` (split as a shell would, never run through one), else ``less``; the file
    is the last argument."""
    pager = shlex.split(os.environ.get("PAGER", "") or "less")
    return [*pager, str(path)]
