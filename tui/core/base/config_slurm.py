"""The config's ``scheduler`` key and ``[slurm]`` table: how a run is submitted to Slurm (pure).

Every value here ends up as an argument of ``sbatch`` (quoted, one argument each): the checks
keep out what Slurm itself would refuse late or read as something else (an option-like value,
a newline), so a typo is an error when the config is read, not a job that never queues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dflash_tui.core.base.config_keys import ConfigError
from dflash_tui.core.base.config_values import no_newline

SCHEDULERS = ("direct", "slurm")
NODE_ACCESS = ("srun", "ssh")
# Slurm's names (partition, account, QOS, job name): letters, digits and a few marks, never a
# leading dash (it would read as an option).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@:-]{0,127}")
# Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or a limit word.
_TIME = re.compile(r"(\d+(-\d+)?(:\d+){0,2}|infinite|unlimited|UNLIMITED|INFINITE)")
MAX_SBATCH_ARGS = 64
MAX_ARG_CHARS = 1024


@dataclass(frozen=True)
class SlurmConfig:
    partition: str | None = None
    nodes: int = 1
    gpus_per_node: int = 8
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    job_name: str = "dflash"
    sbatch_args: tuple[str, ...] = ()
    node_access: str = "srun"


def validate_scheduler(value: Any, where: str) -> str:
    if value not in SCHEDULERS:
        raise ConfigError(
            f"{where}: scheduler must be one of {', '.join(SCHEDULERS)}, not {value!r}"
        )
    return str(value)


def _name(table: dict[str, Any], key: str, where: str) -> str | None:
    v = table.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not _NAME.fullmatch(v):
        raise ConfigError(
            f"{where}.{key} must be a Slurm name (letters, digits, _.+@:-; not starting with "
            f"'-'), not {v!r}"
        )
    return v


def _count(table: dict[str, Any], key: str, default: int, low: int, where: str) -> int:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 100_000:
        raise ConfigError(f"{where}.{key} must be a whole number from {low}, not {v!r}")
    return v


def _time(table: dict[str, Any], where: str) -> str | None:
    v = table.get("time")
    if v is None:
        return None
    if not isinstance(v, str) or not _TIME.fullmatch(v):
        raise ConfigError(
            f"{where}.time must be in Slurm's time format (minutes, HH:MM:SS, D-HH:MM), not {v!r}"
        )
    return v


def _args(table: dict[str, Any], where: str) -> tuple[str, ...]:
    v = table.get("sbatch_args", [])
    if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
        raise ConfigError(f"{where}.sbatch_args must be a list of strings (one argument each)")
    if len(v) > MAX_SBATCH_ARGS or any(len(a) > MAX_ARG_CHARS for a in v):
        raise ConfigError(
            f"{where}.sbatch_args: at most {MAX_SBATCH_ARGS} arguments of {MAX_ARG_CHARS} "
            "characters"
        )
    return tuple(no_newline(f"{where}.sbatch_args", a) for a in v)


def slurm_from_table(table: Any, where: str = "slurm") -> SlurmConfig:
    """The ``[slurm]`` table; unknown keys were refused before (config_keys.check_keys)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    access = table.get("node_access", "srun")
    if access not in NODE_ACCESS:
        raise ConfigError(f"{where}.node_access must be one of {', '.join(NODE_ACCESS)}")
    return SlurmConfig(
        partition=_name(table, "partition", where),
        nodes=_count(table, "nodes", 1, 1, where),
        gpus_per_node=_count(table, "gpus_per_node", 8, 0, where),
        account=_name(table, "account", where),
        qos=_name(table, "qos", where),
        time=_time(table, where),
        job_name=_name(table, "job_name", where) or "dflash",
        sbatch_args=_args(table, where),
        node_access=str(access),
    )
