"""Container wrappers: run a command inside a Proxmox LXC, a docker container or a template.

``pct:200`` -> ``pct exec 200 -- sh -c CMD``; ``docker:NAME`` -> ``docker exec -i NAME sh -c
CMD``; any other spec is a template whose ``{cmd}`` is replaced by the quoted ``sh -c CMD``.
The command is always one quoted argument, so nothing in it reaches the outer shell.
"""

from __future__ import annotations

import shlex

from tui.core.config import validate_container
from tui.core.transport import Wrap


def wrapper(spec: str | None) -> Wrap | None:
    """A function that wraps a sh command for the container ``spec`` (None: no container)."""
    if not spec:
        return None
    spec = validate_container(spec)
    kind, _, ident = spec.partition(":")
    if kind == "pct":
        return lambda cmd: f"pct exec {shlex.quote(ident)} -- sh -c {shlex.quote(cmd)}"
    if kind == "docker":
        return lambda cmd: f"docker exec -i {shlex.quote(ident)} sh -c {shlex.quote(cmd)}"
    template = spec
    return lambda cmd: template.replace("{cmd}", f"sh -c {shlex.quote(cmd)}")
