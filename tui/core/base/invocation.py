"""How to run dflash-tui again, as printed for a person to paste: the real executable (not a
name that may not be on PATH) and the flags that pick the same host and run root (pure).

The app's quit note uses it for ``kill`` and for re-attaching; every word is shell-quoted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence

from dflash_tui.core.base.config_types import DEFAULT_RUN_ROOT, Config, HostConfig

MODULE = "dflash_tui.cli.main"  # what `python -m` runs when there is no script


def own_command(
    argv0: str | None = None,
    executable: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The words that start this dflash-tui: its script's real path, else ``python -m``."""
    arg = sys.argv[0] if argv0 is None else argv0
    python = executable or sys.executable
    if not arg or arg in ("-c", "-m") or arg.endswith(".py"):  # python -m ..., or a source file
        return [python, "-m", MODULE]
    if os.sep in arg:
        return [os.path.realpath(arg)]
    found = which(arg)
    return [os.path.realpath(found)] if found else [python, "-m", MODULE]


def host_flags(host: HostConfig, cfg: Config) -> list[str]:
    """The flags that select ``host`` of ``cfg`` again, with its container and run root."""
    words: list[str] = []
    if cfg.source:
        words += ["--config", os.path.abspath(cfg.source)]
    if cfg.defaults is not None:  # [[hosts]]: the label selects the entry (labels are unique)
        words += ["--host", host.label]
    elif host.address:
        words += ["--host", host.address]
    if host.container:
        words += ["--container", host.container]
    if host.run_root != DEFAULT_RUN_ROOT:
        words += ["--run-root", host.run_root]
    return words


def command_line(
    host: HostConfig, cfg: Config, *subcommand: str, program: Sequence[str] | None = None
) -> str:
    """``dflash-tui [SUBCOMMAND] FLAGS`` for ``host``, shell-quoted, ready to paste."""
    words = [*(own_command() if program is None else program), *subcommand]
    return shlex.join([*words, *host_flags(host, cfg)])


def quit_commands(
    host: HostConfig, cfg: Config, program: Sequence[str] | None = None
) -> tuple[str, str]:
    """What the quit note offers for a run left on ``host``: the command that kills it, and
    the one that re-attaches the app (to every host of a multi-host config)."""
    kill = command_line(host, cfg, "kill", program=program)
    if len(cfg.hosts) > 1 and cfg.source:
        words = [*(own_command() if program is None else program)]
        return kill, shlex.join([*words, "--config", os.path.abspath(cfg.source)])
    return kill, command_line(host, cfg, program=program)
