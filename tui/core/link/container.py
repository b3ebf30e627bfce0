"""Container wrappers: run a command inside a Proxmox LXC, a docker container or a template.

``pct:200`` -> ``pct exec 200 -- sh -c CMD``; ``docker:NAME`` -> ``docker exec -i NAME sh -c
CMD``; any other spec is a template whose ``{cmd}`` (one unquoted word) is replaced by the
quoted ``sh -c CMD``. The command is always one quoted argument, so nothing in it reaches the
outer shell; the spec itself is validated (tui/core/base/config.py) before any use.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from dflash_tui.core.base.config_values import validate_container
from dflash_tui.core.link.transport import Wrap


@dataclass(frozen=True)
class Container:
    """A parsed, validated container spec."""

    kind: str  # pct | docker | template
    ident: str | None  # the VMID or docker name; None for a template
    spec: str

    def wrap(self, cmd: str) -> str:
        inner = f"sh -c {shlex.quote(cmd)}"
        if self.kind == "pct":
            return f"pct exec {shlex.quote(str(self.ident))} -- {inner}"
        if self.kind == "docker":
            return f"docker exec -i {shlex.quote(str(self.ident))} {inner}"
        return self.spec.replace("{cmd}", inner)

    @property
    def label(self) -> str:
        return self.spec if self.kind == "template" else f"{self.kind} {self.ident}"

    def owns_cgroup(self, cgroup: str) -> bool | None:
        """Whether a host process's /proc/PID/cgroup text places it in this container.

        None when the cgroup cannot tell (a template, a docker name rather than an id, or no
        cgroup text): the caller then relies on the PID namespace and start time alone.
        """
        if not cgroup.strip():
            return None
        if self.kind == "pct":
            ident = re.escape(str(self.ident))
            return (
                re.search(rf"(/lxc/{ident}(/|$)|lxc\.payload\.{ident}(/|$))", cgroup, re.M)
                is not None
            )
        if self.kind == "docker" and re.fullmatch(r"[0-9a-f]{12,64}", str(self.ident)):
            return re.search(rf"docker[-/]{self.ident}", cgroup) is not None
        return None


def parse(spec: str | None) -> Container | None:
    """The container of ``spec`` (None: no container); raises ConfigError when it is unsafe."""
    if not spec:
        return None
    spec = validate_container(spec)
    kind, sep, ident = spec.partition(":")
    if sep and kind in ("pct", "docker"):
        return Container(kind, ident, spec)
    return Container("template", None, spec)


def wrapper(spec: str | None) -> Wrap | None:
    """A function that wraps a sh command for the container ``spec`` (None: no container)."""
    container = parse(spec)
    return container.wrap if container else None
