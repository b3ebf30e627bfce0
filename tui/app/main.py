"""Entry point used by tui/cli/main.py: run the app, then say what happened to the run."""

from __future__ import annotations

import argparse

from dflash_tui.core.base.config import Config
from dflash_tui.core.base.text import terminal_safe


def run_app(cfg: Config, args: argparse.Namespace | None = None) -> int:
    from dflash_tui.app.app import DflashApp  # textual is imported only when the app starts

    app = DflashApp(cfg)
    app.run()
    note = app.quit_note()
    if note:
        print(terminal_safe(note))
    return 0
