"""``dflash-tui completion bash|zsh|fish``: a shell completion script generated from the
parsers by shtab (maintained, no hook in the program's start-up: the script is static).

Flags whose value is a file or a folder (by their metavar) complete paths; subcommands,
choices and flags come from the parsers themselves, so the scripts never fall behind them.
"""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "fish")
# The metavars of values that are paths on this machine.
FILE_METAVARS = frozenset({"FILE", "PATH"})
DIR_METAVARS = frozenset({"DIR", "RUN_DIR|RECORD_DIR"})


def mark_paths(parser: argparse.ArgumentParser) -> None:
    """Give each path-valued action the ``complete`` attribute shtab reads."""
    import shtab

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                mark_paths(sub)
        elif action.metavar in FILE_METAVARS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif action.metavar in DIR_METAVARS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    import shtab

    mark_paths(parser)
    return str(shtab.complete(parser, shell=shell))


def run_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    sys.stdout.write(script(parser, shell))
    return 0
