"""Configuration: the TOML file (docs/reference/config.md) merged with command-line flags
(flags win).

The file is ``--config FILE``, else ``config.toml`` in the config folder (paths.py; on Linux
``$XDG_CONFIG_HOME/dflash-tui``, default ``~/.config/dflash-tui``) when it exists. Every table
and key is known (config_keys: a typo is an error, never a default silently kept) and every
value is checked once (config_values, config_restart). With ``[[hosts]]``, ``--host X``
selects the entry whose label or address is X; an address in no entry gets the top-level
settings, and ``Config.notes`` says so.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from dflash_train.topology import Topology, TopologyError
from dflash_tui.core.base.alert_config import AlertConfigError, AlertSettings, alerts_from_table
from dflash_tui.core.base.config_job import jobs_from, validate_job_name
from dflash_tui.core.base.config_keymap import Keymap, keymap_from_table
from dflash_tui.core.base.config_keys import ConfigError, check_keys
from dflash_tui.core.base.config_record import RecordSettings, record_from_table
from dflash_tui.core.base.config_restart import restart_from_table
from dflash_tui.core.base.config_slurm import slurm_from_table, validate_scheduler
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.config_values import (
    no_newline,
    one_line,
    typed,
    validate_container,
    validate_host,
    validate_label,
)
from dflash_tui.core.base.paths import config_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["ConfigError", "load_file", "resolve"]


def default_config_file() -> Path | None:
    """The config read when no --config is given: config.toml in the config folder (paths.py),
    if it exists."""
    path = config_dir() / "config.toml"
    return path if path.is_file() else None


# ---- the file ---------------------------------------------------------------------------------


def _topology(table: Any, where: str) -> Topology:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table with target and drafter lists")
    for role in ("target", "drafter"):
        if not isinstance(table.get(role, []), list):
            got = type(table[role]).__name__
            raise ConfigError(f"{where}.{role} must be a list of GPU indices, not {got}")
    try:
        return Topology.from_lists(table.get("target", []), table.get("drafter", []))
    except TopologyError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _run(run: dict[str, Any], where: str) -> dict[str, Any]:
    """The HostConfig fields a ``[run]`` table sets."""
    env = typed(run, "env", dict, where) or {}
    for k, v in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or not isinstance(v, str):
            raise ConfigError(f"{where}.env: {k!r} must be a variable name with a string value")
        no_newline(f"{where}.env.{k}", v)
    logs = typed(run, "logs", list, where) or []
    for lp in logs:
        if not isinstance(lp, str):
            raise ConfigError(f"{where}.logs must be a list of paths")
        no_newline(f"{where}.logs", lp)
    out: dict[str, Any] = {"env": tuple(sorted(env.items())), "logs": tuple(logs)}
    for key in ("command", "run_root"):  # an empty string keeps the default
        if value := typed(run, key, str, where):
            out[key] = no_newline(f"{where}.{key}", value)
    for key in ("workdir", "compile_cache"):
        out[key] = one_line(f"{where}.{key}", typed(run, key, str, where))
    return out


def _own(doc: dict[str, Any], host: dict[str, Any], key: str, where: str) -> tuple[Any, str]:
    """A host's own table (replacing the top-level one as a whole), else the top-level one."""
    return (host[key], f"{where}.{key}") if key in host else (doc.get(key), key)


def _host_from_table(doc: dict[str, Any], host: dict[str, Any], where: str) -> HostConfig:
    restart_t, restart_at = _own(doc, host, "restart", where)
    policy, keep_runs = restart_from_table({} if restart_t is None else restart_t, restart_at)
    run, run_at = _own(doc, host, "run", where)
    if not isinstance(run or {}, dict):
        raise ConfigError(f"{run_at} must be a table")
    topo_t, topo_at = _own(doc, host, "topology", where)
    address = typed(host, "address", str, where)
    container = typed(host, "container", str, where)
    label = typed(host, "label", str, where)
    job = typed(host, "job", str, where)
    slurm_t, slurm_at = _own(doc, host, "slurm", where)
    sched, sched_at = _own(doc, host, "scheduler", where)
    if job and (sched or "direct") == "slurm":
        raise ConfigError(
            f"{where}: job = {job!r} joins hosts dflash-tui starts itself; under Slurm one host "
            "(the login node) runs the job on [slurm] nodes = N of its own"
        )
    fields: dict[str, Any] = _run(run or {}, run_at)
    if topo_t is not None:
        fields["topology"] = _topology(topo_t, topo_at)
    return replace(
        HostConfig(),
        **fields,
        address=validate_host(address) if address else None,
        container=validate_container(container) if container else None,
        name=validate_label(label, where) if label else None,
        job=validate_job_name(job, where) if job else None,
        restart=policy,
        keep_runs=keep_runs,
        thresholds=_thresholds(doc.get("thresholds", {})),
        scheduler=validate_scheduler(sched or "direct", sched_at),
        slurm=slurm_from_table({} if slurm_t is None else slurm_t, slurm_at),
    )


def _thresholds(table: Any) -> tuple[tuple[str, float], ...]:
    """``[thresholds]``: its keys were checked by check_keys; every value a finite number."""
    if not isinstance(table, dict):
        raise ConfigError("thresholds must be a table")
    out = []
    for key, v in table.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"thresholds.{key} must be a number >= 0, not {v!r}")
        out.append((key, v))
    return tuple(out)


def _unique(hosts: tuple[HostConfig, ...]) -> tuple[HostConfig, ...]:
    first: dict[str, int] = {}
    for i, h in enumerate(hosts):
        if h.label in first:
            raise ConfigError(
                f"hosts[{first[h.label]}] and hosts[{i}] are both called {h.label!r}: give each "
                'a unique label = "..." (labels name hosts on screen and select them with --host)'
            )
        first[h.label] = i
    return hosts


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not valid TOML: {exc}") from None


def load_file(path: str | os.PathLike[str]) -> Config:
    doc = _read(path)
    check_keys(doc, str(path))  # before any value is used
    hosts_t = doc.get("hosts")
    if hosts_t is None:
        host_t = doc.get("host") or {}
        if not isinstance(host_t, dict):
            raise ConfigError("host must be a table")
        if "job" in host_t or "jobs" in doc:
            raise ConfigError(f"config {path}: a job spans [[hosts]] entries, not [host]")
        return Config(
            hosts=(_host_from_table(doc, host_t, "host"),),
            source=str(path),
            alerts=_alerts(doc),
            record=_record(doc),
            keys=_keymap(doc),
        )
    if "host" in doc:
        raise ConfigError(f"config {path}: use [host] (one machine) or [[hosts]], not both")
    tables = isinstance(hosts_t, list) and all(isinstance(h, dict) for h in hosts_t)
    if not tables or not hosts_t:
        raise ConfigError("hosts must be a list of [[hosts]] tables")
    hosts = _unique(tuple(_host_from_table(doc, h, f"hosts[{i}]") for i, h in enumerate(hosts_t)))
    return Config(
        hosts=hosts,
        jobs=jobs_from(hosts, doc.get("jobs", {})),
        source=str(path),
        defaults=_host_from_table(doc, {}, ""),
        alerts=_alerts(doc),
        record=_record(doc),
        keys=_keymap(doc),
    )


def _keymap(doc: dict[str, Any]) -> Keymap:
    try:
        return keymap_from_table(doc.get("keys", {}))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _record(doc: dict[str, Any]) -> RecordSettings:
    try:
        return record_from_table(doc.get("record", {}))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _alerts(doc: dict[str, Any]) -> AlertSettings:
    try:
        return alerts_from_table(doc.get("alerts", {}))
    except AlertConfigError as exc:
        raise ConfigError(str(exc)) from None


# ---- the flags --------------------------------------------------------------------------------


def select_host(cfg: Config, wanted: str) -> tuple[HostConfig, str | None]:
    """The host ``--host wanted`` names, and a note for the user when it is in no entry.

    A config file's host whose label is ``wanted`` is taken as it is; with ``[[hosts]]`` so is
    the one entry at that address; an address in no entry gets the top-level settings. Without
    ``[[hosts]]`` the one host (the ``[host]`` table's settings) moves to that address.
    """
    if cfg.source is not None:
        for h in cfg.hosts:
            if h.label == wanted:
                return h, None
    if cfg.defaults is None:
        return replace(cfg.hosts[0], address=wanted, name=None), None
    at = [h for h in cfg.hosts if h.address == wanted]
    if len(at) > 1:
        labels = ", ".join(h.label for h in at)
        raise ConfigError(
            f"--host {wanted}: {len(at)} [[hosts]] entries have that address ({labels}): "
            "pass one's label"
        )
    if at:
        return at[0], None
    return replace(cfg.defaults, address=wanted), (
        f"--host {wanted} is in no [[hosts]] entry of {cfg.source} (labels: "
        f"{', '.join(h.label for h in cfg.hosts)}): it gets the top-level settings"
    )


def _changes(flags: dict[str, Any]) -> dict[str, Any]:
    """The HostConfig fields the flags set (a flag that is None or absent was not given)."""
    changes: dict[str, Any] = {}
    if flags.get("container"):
        changes["container"] = validate_container(flags["container"])
    if flags.get("topology"):
        try:
            changes["topology"] = Topology.parse(flags["topology"])
        except TopologyError as exc:
            raise ConfigError(f"--topology: {exc}") from None
    if flags.get("command"):
        changes["command"] = no_newline("--command", flags["command"])
    if flags.get("log"):
        changes["logs"] = tuple(no_newline("--log", p) for p in flags["log"])
    if flags.get("run_root"):
        changes["run_root"] = no_newline("--run-root", flags["run_root"])
    if flags.get("scheduler"):
        changes["scheduler"] = validate_scheduler(flags["scheduler"], "--scheduler")
    if flags.get("insecure_accept_new_host_key"):
        changes["insecure_accept_new_host_key"] = True
    if flags.get("keep_runs") is not None:
        keep = flags["keep_runs"]
        if not isinstance(keep, int) or keep < 0:
            raise ConfigError(f"--keep-runs must be a whole number >= 0 (0 keeps all), not {keep}")
        changes["keep_runs"] = keep
    return changes


def apply_flags(cfg: Config, flags: dict[str, Any]) -> Config:
    """``--host`` picks one host (select_host); the other flags override every host kept."""
    hosts, notes = cfg.hosts, cfg.notes
    job = next((j for j in cfg.jobs if j.name == flags.get("host")), None)
    if job is not None:  # --host JOB: every member of the job
        hosts = tuple(h for h in cfg.hosts if h.job == job.name)
    elif flags.get("host"):
        host, note = select_host(cfg, validate_host(flags["host"]))
        hosts, notes = (host,), notes + ((note,) if note else ())
        if host.job:  # one member alone: no rendezvous, the others not touched
            notes += (
                f"{host.label} is a member of job {host.job}: acted on alone, without the "
                f"job's rendezvous; --host {host.job} acts on the whole job",
            )
    changes = _changes(flags)
    if changes:
        hosts = tuple(replace(h, **changes) for h in hosts)
    if flags.get("auto_restart"):  # keeps each host's other [restart] settings
        hosts = tuple(replace(h, restart=replace(h.restart, enabled=True)) for h in hosts)
    top: dict[str, Any] = {"hosts": hosts, "notes": notes}
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
    """The config file (--config, else the default one if present) with the flags applied."""
    path = flags.get("config") or default_config_file()
    return apply_flags(load_file(path) if path else Config(), flags)


def expand_local(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))
