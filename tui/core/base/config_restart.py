"""The config's ``[restart]`` table (top level, or a host's own): the auto-restart policy and
the run-directory retention, every value checked (pure)."""

from __future__ import annotations

from typing import Any

from dflash_tui.core.base.config_keys import ConfigError
from dflash_tui.core.base.timings import RestartPolicy


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
    """The ``[restart]`` table: the auto-restart policy and the run-directory retention.

    Unknown keys were refused before (config_keys.check_keys)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
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
