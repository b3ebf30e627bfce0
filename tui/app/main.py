"""Entry point used by tui/cli/main.py: run the app, then say what happened to the run.

Before Textual starts, the terminal is checked (terminal.py): where the app cannot draw it
refuses in one line that names what works there instead, and exits 2.
"""

from __future__ import annotations

import argparse
import sys

from dflash_tui.app.terminal import terminal_problem
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.text import terminal_safe


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

    app = DflashApp(cfg)
    app.run()
    note = app.quit_note()
    if note:
        print(terminal_safe(note))
    return 0
