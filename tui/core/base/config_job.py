"""Jobs across hosts: ``[[hosts]]`` entries sharing ``job = "NAME"`` are one run (pure).

A job's members, in config order, are its nodes: member 0 is node rank 0 and the rendezvous
master. ``[jobs.NAME]`` (optional) sets ``master_addr`` (default: member 0's address as the
others reach it: its host part, or this machine's name for a local member) and
``master_port`` (default 29500, torchrun's). Every member runs the same command; it may hold
``{node_rank}``. ``member_host`` gives the HostConfig a member is launched with: the
rendezvous environment added, ``{node_rank}`` put in, ``--resume auto`` on a relaunch.
"""

from __future__ import annotations

import re
import shlex
import socket
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dflash_tui.core.base.config_keys import ConfigError
from dflash_tui.core.base.config_types import DEFAULT_MASTER_PORT, HostConfig, JobConfig
from dflash_tui.core.base.config_values import validate_host

JOB_KEYS = ("master_addr", "master_port")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
# torchrun's elastic restarts: the supervisor owns restarts (docs/pipeline.md)
_MAX_RESTARTS = re.compile(r"--max[-_]restarts(?:=|\s+)(\d+)")
JOB_ENV = ("MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK", "DFLASH_JOB")


def validate_job_name(name: str, where: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ConfigError(
            f"{where}.job {name!r}: letters, digits, '.', '_', '-' only (up to 64), "
            "not starting with '.' or '-'"
        )
    return name


def reach_address(host: HostConfig) -> str:
    """How the other members reach ``host``: its address' host part, else this machine."""
    if host.address is None:
        return socket.gethostname()
    addr = host.address.rpartition("@")[2]
    return addr.rsplit(":", 1)[0] if addr.count(":") == 1 else addr


def _table(tables: Any, name: str) -> dict[str, Any]:
    t = tables.get(name, {})
    if not isinstance(t, dict):
        raise ConfigError(f"jobs.{name} must be a table")
    bad = [k for k in t if k not in JOB_KEYS]
    if bad:
        raise ConfigError(f"unknown key 'jobs.{name}.{bad[0]}' (known: {', '.join(JOB_KEYS)})")
    return t


def jobs_from(hosts: Sequence[HostConfig], tables: Any) -> tuple[JobConfig, ...]:
    """The jobs the hosts form, checked: equal commands, a known name, no label clash."""
    if not isinstance(tables, dict):
        raise ConfigError("jobs must be a table of [jobs.NAME] tables")
    names = list(dict.fromkeys(h.job for h in hosts if h.job))
    for extra in set(tables) - set(names):
        raise ConfigError(f"[jobs.{extra}]: no [[hosts]] entry has job = {extra!r}")
    labels = {h.label for h in hosts}
    out = []
    for name in names:
        if name in labels:
            raise ConfigError(f"job {name!r} is also a host's label: give them different names")
        members = [h for h in hosts if h.job == name]
        _same_command(name, members)
        t = _table(tables, name)
        addr = t.get("master_addr")
        if addr is not None and (not isinstance(addr, str) or not addr):
            raise ConfigError(f"jobs.{name}.master_addr must be a host name or address")
        port = t.get("master_port", DEFAULT_MASTER_PORT)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError(f"jobs.{name}.master_port must be a port 1..65535, not {port!r}")
        master = validate_host(addr) if addr else reach_address(members[0])
        out.append(JobConfig(name, tuple(h.label for h in members), master, port))
    return tuple(out)


def _same_command(name: str, members: Sequence[HostConfig]) -> None:
    first = members[0]
    for h in members[1:]:
        if h.command != first.command:
            raise ConfigError(
                f"job {name!r}: every member runs the same command, but {h.label!r} runs "
                f"{h.command!r} and {first.label!r} runs {first.command!r}"
            )


def elastic_warning(command: str) -> str | None:
    """A warning when the command asks torchrun for elastic restarts (--max-restarts > 0)."""
    m = _MAX_RESTARTS.search(command)
    if m and int(m.group(1)) > 0:
        return (
            f"the command asks torchrun for elastic restarts (--max-restarts {m.group(1)}): "
            "its agent would respawn workers inside the run, unseen by dflash-tui; use "
            "--max-restarts 0 so the supervisor owns restarts (docs/pipeline.md)"
        )
    return None


def resumed(command: str) -> str:
    """The command of a relaunch: ``--resume auto`` added unless it names ``--resume``."""
    if re.search(r"(^|\s)--resume(=|\s|$)", command):
        return command
    return f"{command} --resume auto"


def member_host(job: JobConfig, host: HostConfig, *, resume: bool = False) -> HostConfig:
    """``host`` as job member: the rendezvous in its environment, its rank in the command."""
    rank = job.members.index(host.label)
    env = dict(host.env)
    env.update(
        MASTER_ADDR=job.master_addr,
        MASTER_PORT=str(job.master_port),
        NNODES=str(job.nnodes),
        NODE_RANK=str(rank),
        DFLASH_JOB=job.name,
    )
    command = resumed(host.command) if resume else host.command
    # The rank is a number; quoted all the same, as everything that reaches a shell.
    command = command.replace("{node_rank}", shlex.quote(str(rank)))
    return replace(host, env=tuple(sorted(env.items())), command=command)
