"""Entry point used by tui/cli/main.py: run the app, then say what happened to the run.

Before Textual starts, the terminal is checked: without a TTY, with ``TERM=dumb`` or with an
output encoding that is not UTF-8, the app cannot draw (its borders, bars and chips are
Unicode and its screen is cursor-addressed), so it refuses in one line that names what works
there instead (``status``, ``status --watch``, ``LANG=C.UTF-8``) and exits 2. Served in a
browser (Textual's web driver: ``dflash-tui serve``) there is no TTY, and none is needed.
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from typing import TextIO

from dflash_tui.core.base.config import Config
from dflash_tui.core.base.text import terminal_safe

NO_TTY = (
    "dflash-tui: the app needs a terminal (stdin and stdout are not a TTY here); "
    "for scripts and logs use `dflash-tui status` (once) or `dflash-tui status --watch`"
)


def terminal_problem(
    stdin: TextIO | None = None, stdout: TextIO | None = None, env: dict[str, str] | None = None
) -> str | None:
    """Why the app cannot draw here (one line, with what to use instead), or None."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    env = dict(os.environ) if env is None else env
    if env.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):  # served: the browser draws
        return None
    if not (stdin.isatty() and stdout.isatty()):
        return NO_TTY
    term = env.get("TERM", "")
    encoding = getattr(stdout, "encoding", None) or "ascii"
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if term == "dumb" or not utf8:
        why = "TERM=dumb" if term == "dumb" else f"encoding {encoding}"
        return (
            f"dflash-tui: this terminal cannot draw the app ({why}); use `dflash-tui status "
            "--watch` for plain lines, or a UTF-8 terminal (e.g. LANG=C.UTF-8, TERM=xterm-256color)"
        )
    return None


def run_app(cfg: Config, args: argparse.Namespace | None = None) -> int:
    from dflash_tui.app.keys.keymap import keymap_problems

    clashes = keymap_problems(cfg.keys)  # a config error: before anything is drawn
    if clashes:
        where = f"config {cfg.source}: " if cfg.source else ""
        print(terminal_safe(f"dflash-tui: {where}" + "; ".join(clashes)), file=sys.stderr)
        return 2
    problem = terminal_problem()
    if problem is not None:
        print(terminal_safe(problem), file=sys.stderr)
        return 2
    from dflash_tui.app.app import DflashApp  # textual is imported only when the app starts
    from dflash_tui.app.heap import few_arenas

    few_arenas()  # before Textual's and the probe's threads start (tui/app/heap.py)
    app = DflashApp(cfg)
    app.run()
    note = app.quit_note()
    if note:
        print(terminal_safe(note))
    return 0
