"""Configuration: the TOML file of DESIGN.md merged with command-line flags (flags win).

Every value is validated here, once, so nothing downstream sees a newline in a host name or a
container id with shell metacharacters.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dflash_train.topology import Topology, TopologyError
from dflash_tui.core.base.alert_config import AlertConfigError, AlertSettings, alerts_from_table
from dflash_tui.core.base.timings import RestartPolicy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_RUN_ROOT = "~/.local/state/dflash-tui/runs"
# The bundled tiny pipeline, on the CPU: what a new user sees launched.
# Long enough to watch, kill and restart (60 steps take ~10 s on 2 cores).
DEFAULT_COMMAND = (
    f"{shlex.quote(sys.executable)} -m dflash_train.train --preset tiny --device cpu --steps 3000"
)

# No part may start with "-": an address must never read as an ssh option.
_HOST_RE = re.compile(
    r"^(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?"
    r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$"
)
_CONTAINER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ConfigError(ValueError):
    """A config file or flag value that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class HostConfig:
    """One supervised machine. ``address`` None means this machine."""

    address: str | None = None
    container: str | None = None  # "pct:ID", "docker:NAME" or a template with {cmd}
    topology: Topology = field(default_factory=Topology)
    command: str = DEFAULT_COMMAND
    workdir: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    logs: tuple[str, ...] = ()
    run_root: str = DEFAULT_RUN_ROOT
    compile_cache: str | None = None
    insecure_accept_new_host_key: bool = False
    restart: RestartPolicy = field(default_factory=RestartPolicy)  # auto-restart (opt-in)
    keep_runs: int = 0  # retention: prune older run directories beyond this many (0 keeps all)

    @property
    def label(self) -> str:
        return self.address or "local"


@dataclass(frozen=True)
class Config:
    hosts: tuple[HostConfig, ...] = (HostConfig(),)
    interval: float = 2.0
    read_only: bool = False
    theme: str | None = None
    alerts: AlertSettings = field(default_factory=AlertSettings)  # [alerts]

    @property
    def host(self) -> HostConfig:
        return self.hosts[0]


def validate_host(address: str) -> str:
    if not _HOST_RE.fullmatch(address):
        raise ConfigError(
            f"host {address!r} is not an ssh-config alias or [user@]host[:port] "
            "(letters, digits, '.', '_', '-' only)"
        )
    return address


def validate_container(spec: str) -> str:
    """Accept ``pct:ID``, ``docker:NAME`` or a template containing ``{cmd}`` (one line)."""
    if "\n" in spec or "\r" in spec or "\0" in spec:
        raise ConfigError("container: a newline or NUL is not allowed")
    kind, sep, ident = spec.partition(":")
    if sep and kind == "pct" and not ident.isdigit():
        raise ConfigError(f"container {spec!r}: a pct id is a number (the VMID), e.g. pct:200")
    if sep and kind in ("pct", "docker"):
        if not _CONTAINER_ID_RE.match(ident):
            raise ConfigError(
                f"container {spec!r}: {kind} id must be letters, digits, '.', '_', '-'"
            )
        return spec
    if "{cmd}" not in spec:
        raise ConfigError(
            f"container {spec!r}: use pct:ID, docker:NAME or a template containing {{cmd}}"
        )
    _check_template(spec)
    return spec


def _check_template(spec: str) -> None:
    """``{cmd}`` must be one unquoted word, once: inside quotes it would break our quoting."""
    try:
        words = shlex.split(spec.replace("{cmd}", " DFLASH_CMD_A DFLASH_CMD_B "))
    except ValueError as exc:
        raise ConfigError(f"container template {spec!r}: {exc}") from None
    alone = re.search(r"(?<!\S)\{cmd\}(?!\S)", spec) is not None
    if spec.count("{cmd}") != 1 or not alone or not {"DFLASH_CMD_A", "DFLASH_CMD_B"} <= set(words):
        raise ConfigError(
            f"container template {spec!r}: {{cmd}} must appear once, as a word of its own "
            "and not inside quotes (it is replaced by an already quoted `sh -c '...'`)"
        )


def _no_newline(name: str, value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ConfigError(f"{name}: a newline or NUL is not allowed in {value[:40]!r}")
    return value


def _one_line(name: str, value: str | None) -> str | None:
    return None if value is None else _no_newline(name, value)


def _typed(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    v = table.get(key)
    if v is not None and not isinstance(v, kind):
        raise ConfigError(f"{where}.{key} must be a {kind.__name__}, not {type(v).__name__}")
    return v


RESTART_KEYS = (
    "auto",
    "success_codes",
    "retries",
    "backoff_s",
    "max_backoff_s",
    "stable_s",
    "keep_runs",
)


def _number(table: dict[str, Any], key: str, default: float, where: str) -> float:
    v = table.get(key, default)
    # bool is an int in Python: `retries = true` is a mistake, not 1.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}.{key} must be a number, not {type(v).__name__}")
    if v < 0 or v != v or v == float("inf"):
        raise ConfigError(f"{where}.{key} must be a finite number >= 0, not {v}")
    return float(v)


def _count(table: dict[str, Any], key: str, default: int, where: str) -> int:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}.{key} must be a whole number, not {type(v).__name__}")
    if not 0 <= v <= 10_000:
        raise ConfigError(f"{where}.{key} must be between 0 and 10000, not {v}")
    return v


def _codes(table: dict[str, Any], where: str) -> frozenset[int]:
    codes = table.get("success_codes", [0])
    if not isinstance(codes, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in codes
    ):
        raise ConfigError(f"{where}.success_codes must be a list of exit codes 0-255, e.g. [0]")
    return frozenset(codes)


def restart_from_table(table: Any, where: str = "restart") -> tuple[RestartPolicy, int]:
    """The ``[restart]`` table: the auto-restart policy and the run-directory retention."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(RESTART_KEYS))
    if unknown:  # a typo (`retry = 5`) must not silently leave the default in force
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(RESTART_KEYS)})")
    auto = table.get("auto", False)
    if not isinstance(auto, bool):
        raise ConfigError(f"{where}.auto must be true or false, not {type(auto).__name__}")
    backoff = _number(table, "backoff_s", 2.0, where)
    most = _number(table, "max_backoff_s", 60.0, where)
    if most < backoff:
        raise ConfigError(f"{where}.max_backoff_s ({most:g}) is below backoff_s ({backoff:g})")
    policy = RestartPolicy(
        enabled=auto,
        success_codes=_codes(table, where),
        retries=_count(table, "retries", 3, where),
        backoff_s=backoff,
        max_backoff_s=most,
        stable_s=_number(table, "stable_s", 60.0, where),
    )
    return policy, _count(table, "keep_runs", 0, where)


def _host_from_table(doc: dict[str, Any], host: dict[str, Any], where: str) -> HostConfig:
    h = HostConfig()
    # A host's own [hosts.restart] replaces the top-level [restart] as a whole, like `run`.
    in_host = "restart" in host
    restart_t = host["restart"] if in_host else doc.get("restart", {})
    policy, keep_runs = restart_from_table(restart_t, f"{where}.restart" if in_host else "restart")
    address = _typed(host, "address", str, where)
    container = _typed(host, "container", str, where)
    topo_t = host.get("topology", doc.get("topology"))
    run = host.get("run", doc.get("run")) or {}
    if not isinstance(run, dict):
        raise ConfigError(f"{where}.run must be a table")
    if topo_t is not None:
        if not isinstance(topo_t, dict):
            raise ConfigError("topology must be a table with target and drafter lists")
        for role in ("target", "drafter"):
            if not isinstance(topo_t.get(role, []), list):
                got = type(topo_t[role]).__name__
                raise ConfigError(f"topology.{role} must be a list of GPU indices, not {got}")
        try:
            topology = Topology.from_lists(topo_t.get("target", []), topo_t.get("drafter", []))
        except TopologyError as exc:
            raise ConfigError(f"topology: {exc}") from None
        h = replace(h, topology=topology)
    env = _typed(run, "env", dict, "run") or {}
    for k, v in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or not isinstance(v, str):
            raise ConfigError(f"run.env: {k!r} must be a variable name with a string value")
        _no_newline(f"run.env.{k}", v)
    logs = _typed(run, "logs", list, "run") or []
    for lp in logs:
        if not isinstance(lp, str):
            raise ConfigError("run.logs must be a list of paths")
        _no_newline("run.logs", lp)
    return replace(
        h,
        address=validate_host(address) if address else None,
        container=validate_container(container) if container else None,
        command=_no_newline("run.command", _typed(run, "command", str, "run") or h.command),
        workdir=_one_line("run.workdir", _typed(run, "workdir", str, "run")),
        env=tuple(sorted(env.items())),
        logs=tuple(logs),
        run_root=_no_newline("run.run_root", _typed(run, "run_root", str, "run") or h.run_root),
        compile_cache=_one_line("run.compile_cache", _typed(run, "compile_cache", str, "run")),
        restart=policy,
        keep_runs=keep_runs,
    )


def load_file(path: str | os.PathLike[str]) -> Config:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not valid TOML: {exc}") from None
    hosts_t = doc.get("hosts")
    if hosts_t is not None:
        if not isinstance(hosts_t, list) or not hosts_t:
            raise ConfigError("hosts must be a list of [[hosts]] tables")
        hosts = tuple(_host_from_table(doc, h, f"hosts[{i}]") for i, h in enumerate(hosts_t))
    else:
        host_t = doc.get("host") or {}
        if not isinstance(host_t, dict):
            raise ConfigError("host must be a table")
        hosts = (_host_from_table(doc, host_t, "host"),)
    try:
        alerts = alerts_from_table(doc.get("alerts", {}))
    except AlertConfigError as exc:
        raise ConfigError(str(exc)) from None
    return Config(hosts=hosts, alerts=alerts)


def apply_flags(cfg: Config, flags: dict[str, Any]) -> Config:
    """Override every host of ``cfg`` with the flags given (None means not given)."""
    changes: dict[str, Any] = {}
    if flags.get("host"):
        changes["address"] = validate_host(flags["host"])
    if flags.get("container"):
        changes["container"] = validate_container(flags["container"])
    if flags.get("topology"):
        try:
            changes["topology"] = Topology.parse(flags["topology"])
        except TopologyError as exc:
            raise ConfigError(f"--topology: {exc}") from None
    if flags.get("command"):
        changes["command"] = _no_newline("--command", flags["command"])
    if flags.get("log"):
        changes["logs"] = tuple(_no_newline("--log", p) for p in flags["log"])
    if flags.get("run_root"):
        changes["run_root"] = _no_newline("--run-root", flags["run_root"])
    if flags.get("insecure_accept_new_host_key"):
        changes["insecure_accept_new_host_key"] = True
    if flags.get("keep_runs") is not None:
        keep = flags["keep_runs"]
        if not isinstance(keep, int) or keep < 0:
            raise ConfigError(f"--keep-runs must be a whole number >= 0 (0 keeps all), not {keep}")
        changes["keep_runs"] = keep
    hosts = cfg.hosts
    if changes:
        # A --host flag names one machine: it replaces a multi-host config with that one.
        base = hosts[0] if "address" in changes else None
        hosts = (replace(base, **changes),) if base else tuple(replace(h, **changes) for h in hosts)
    if flags.get("auto_restart"):  # keeps each host's other [restart] settings
        hosts = tuple(replace(h, restart=replace(h.restart, enabled=True)) for h in hosts)
    top: dict[str, Any] = {"hosts": hosts}
    if flags.get("interval") is not None:
        top["interval"] = check_interval(flags["interval"])
    if flags.get("read_only"):
        top["read_only"] = True
    if flags.get("theme"):
        top["theme"] = flags["theme"]
    return replace(cfg, **top)


MIN_INTERVAL, MAX_INTERVAL = 0.5, 3600.0  # below: nvidia-smi and /proc scans would dominate


def check_interval(value: float) -> float:
    v = float(value)
    if not MIN_INTERVAL <= v <= MAX_INTERVAL:  # also false for nan
        raise ConfigError(
            f"--interval must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds, not {value}"
        )
    return v


def resolve(flags: dict[str, Any]) -> Config:
    cfg = load_file(flags["config"]) if flags.get("config") else Config()
    return apply_flags(cfg, flags)


def expand_local(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))
