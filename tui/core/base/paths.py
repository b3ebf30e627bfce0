"""Where dflash-tui keeps its files on this machine: the config (and the user's themes below
it) and its state (saved log views, a detached supervisor's log for a remote host).

platformdirs knows each platform's convention, so no path is built by hand here; on Linux these
are ``$XDG_CONFIG_HOME/dflash-tui`` (default ``~/.config/dflash-tui``) and
``$XDG_STATE_HOME/dflash-tui`` (default ``~/.local/state/dflash-tui``). A run root is not among
them: it is a path on the machine of the job, expanded by that machine's shell (config.py's
DEFAULT_RUN_ROOT).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

APP = "dflash-tui"


def config_dir() -> Path:
    """The folder of config.toml and themes/."""
    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    """The folder of what the app and the supervisor write for the user on this machine."""
    return Path(platformdirs.user_state_dir(APP, appauthor=False))
