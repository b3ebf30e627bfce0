"""Can the app draw here? Without a TTY, with ``TERM=dumb`` or with an output encoding that is
not UTF-8 it cannot (its borders, bars and chips are Unicode and its screen is
cursor-addressed): one line says why and names what works there instead. The live app and
``replay`` ask the same question before Textual starts. Served in a browser (Textual's web
driver: ``dflash-tui serve``) there is no TTY, and none is needed.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TextIO

INSTEAD = "`dflash-tui status` (once) or `dflash-tui status --watch`"
NO_TTY = (
    "dflash-tui: the app needs a terminal (stdin and stdout are not a TTY here); "
    f"for scripts and logs use {INSTEAD}"
)


def terminal_problem(
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    env: dict[str, str] | None = None,
    instead: str = INSTEAD,
) -> str | None:
    """Why the app cannot draw here (one line, with what to use instead), or None.
    ``instead`` names what works without one (``replay`` points to ``status --replay``)."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    env = dict(os.environ) if env is None else env
    if env.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):  # served: the browser draws
        return None
    if not (stdin.isatty() and stdout.isatty()):
        return NO_TTY.replace(INSTEAD, instead)
    term = env.get("TERM", "")
    encoding = getattr(stdout, "encoding", None) or "ascii"
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if term == "dumb" or not utf8:
        why = "TERM=dumb" if term == "dumb" else f"encoding {encoding}"
        return (
            f"dflash-tui: this terminal cannot draw the app ({why}); use {instead} "
            "for plain lines, or a UTF-8 terminal (e.g. LANG=C.UTF-8, TERM=xterm-256color)"
        )
    return None
