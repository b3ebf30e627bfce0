"""Start the probe where python3 may be missing: python3 when it is there, else probe_shell.sh.

The feed builds ``<python> - --interval=2 ...`` and sends probe.py on stdin. A transport whose
``python`` is :func:`launcher` gets, in place of ``python3``, a short ``sh -c`` program that
checks ``command -v python3`` on the remote side (inside the container, when wrapped), and
either ``exec``s python3 with the same arguments or drains stdin and runs the shell probe,
which travels in the same command line. Nothing is installed on the remote machine.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from pathlib import Path

SHELL_PROBE = Path(__file__).with_name("shell.sh")

_LOADER = (
    'if command -v python3 >/dev/null 2>&1; then exec python3 "$@"; fi; '
    "cat >/dev/null; "  # the python source on stdin is not needed; drain it so no writer blocks
    'export DFLASH_PROBE_DEGRADED="python3 is not on PATH"; exec sh -c "$0" dflash-probe "$@"'
)


@lru_cache(maxsize=1)
def launcher() -> str:
    """The sh words that stand where ``python3`` would in the probe command."""
    # $0 of the loader is the shell probe's source; "$@" are the probe's own arguments.
    return f"sh -c {shlex.quote(_LOADER)} {shlex.quote(SHELL_PROBE.read_text())}"


def shell_probe_command(args: str = "--once") -> str:
    """Run the shell probe alone (tests, benchmarks): ``sh -c SOURCE dflash-probe ARGS``."""
    return f"sh -c {shlex.quote(SHELL_PROBE.read_text())} dflash-probe {args}"
