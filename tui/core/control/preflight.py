"""Before a launch of the bundled pipeline: can the interpreter that will run it import torch?

Installed without the ``pipeline`` extra (pipx, a bastion), dflash-tui still launches the
bundled pipeline by default; the job would then die with ``ModuleNotFoundError: torch`` and
the user would be left to guess the fix. So when the run command is the bundled pipeline
(``PYTHON -m dflash_train[.train]`` or the ``dflash-train`` script), its interpreter is asked
on the host, through the same transport (SSH, container), in the run's workdir and env, which
of the pipeline's modules it cannot find, before any run directory is made. Only a positive
answer refuses: a check that cannot run leaves the launch to report what it finds.
"""

from __future__ import annotations

import os
import re
import shlex

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.script import ControlError, env_text
from dflash_tui.core.link.transport import Transport, TransportError

PIPELINE_MODULES = ("torch", "transformers")
INSTALL = "pip install 'dflash-tui[pipeline]'"
MODULES = ("dflash_train", "dflash_train.train")
SCRIPT = "dflash-train"
CHECK_TIMEOUT_S = 30.0
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Prints the missing modules (find_spec: found without importing, so the check stays quick).
_FIND = (
    "import importlib.util as u\n"
    f"print(' '.join(m for m in {PIPELINE_MODULES!r} if u.find_spec(m) is None))\n"
)


def pipeline_interpreter(command: str) -> tuple[str, bool] | None:
    """``(word, is_script)`` when ``command`` runs the bundled pipeline: the interpreter, or
    the ``dflash-train`` script whose first line names it; None for any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and (words[0] == "env" or _ASSIGNMENT.match(words[0])):
        words = words[1:]
    if not words:
        return None
    name = os.path.basename(words[0])
    if name == SCRIPT:
        return words[0], True
    runs_module = len(words) >= 3 and words[1] == "-m" and words[2] in MODULES
    if runs_module and name.startswith("python"):
        return words[0], False
    return None


def _cd(workdir: str | None) -> str:
    if not workdir:
        return ""
    if workdir == "~" or workdir.startswith("~/"):
        return f'cd "$HOME"{shlex.quote(workdir[1:]) if workdir != "~" else ""} 2>/dev/null; '
    return f"cd {shlex.quote(workdir)} 2>/dev/null; "


def check_command(host: HostConfig, word: str, is_script: bool) -> str:
    """The sh command that prints the pipeline modules the interpreter cannot find."""
    exports = env_text(host.env).replace("\n", "; ")
    if is_script:  # the interpreter is the script's #! line (it may be `/usr/bin/env python3`)
        where = shlex.quote(word) if "/" in word else f"$(command -v {shlex.quote(word)})"
        python = f'p={where} && py=$(sed -n "1s/^#![[:space:]]*//p" "$p") && [ -n "$py" ] && $py'
    else:
        python = shlex.quote(word)
    return f"{_cd(host.workdir)}{exports}{python} -c {shlex.quote(_FIND)}"


async def missing_pipeline(transport: Transport, host: HostConfig) -> str | None:
    """Why the launch cannot work (naming the interpreter, the missing modules and the
    install), or None: not the bundled pipeline, everything found, or no answer to judge."""
    found = pipeline_interpreter(host.command)
    if found is None:
        return None
    word, is_script = found
    try:
        res = await transport.run(check_command(host, word, is_script), None, CHECK_TIMEOUT_S)
    except (TransportError, ControlError):
        return None  # the launch meets the same link, or the same bad env, and says so
    missing = res.stdout.strip().split() if res.rc == 0 else []
    missing = [m for m in missing if m in PIPELINE_MODULES]
    if not missing:
        return None
    who = f"the {SCRIPT} script {word}" if is_script else f"the interpreter {word}"
    if host.address or host.container:
        who += f" on {host.label}"
    return (
        f"the bundled pipeline cannot run: {who} cannot import {', '.join(missing)} "
        f"(dflash-tui was installed without the pipeline extra); install it where the run "
        f"starts: {INSTALL}"
    )
