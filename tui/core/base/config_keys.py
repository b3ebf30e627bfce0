"""The config file's known tables and keys, and the check that refuses any other (pure).

A typo (``[topolgy]``, ``comand = "x"``) must never leave a default silently in force: every
unknown table or key, at any level, is an error naming it and the nearest known one.
``config.py`` reads the values; this module only knows the shape.
"""

from __future__ import annotations

import difflib
from typing import Any

ANY = "any"  # a free-form table: its keys are the user's (run.env: variable names)
Schema = dict[str, Any]  # key -> None (a value), ANY, or the Schema of a table

RESTART_KEYS = (
    "auto",
    "success_codes",
    "retries",
    "backoff_s",
    "max_backoff_s",
    "stable_s",
    "keep_runs",
)
TOPOLOGY: Schema = {"target": None, "drafter": None}
RUN: Schema = {
    "command": None,
    "workdir": None,
    "env": ANY,
    "logs": None,
    "run_root": None,
    "compile_cache": None,
}
RESTART: Schema = dict.fromkeys(RESTART_KEYS)
# A host's own tables replace the top-level ones as a whole.
SLURM: Schema = {
    "partition": None,
    "nodes": None,
    "gpus_per_node": None,
    "account": None,
    "qos": None,
    "time": None,
    "job_name": None,
    "sbatch_args": None,
    "node_access": None,
}
HOST: Schema = {
    "address": None,
    "container": None,
    "label": None,
    "job": None,  # [[hosts]] sharing a job name are one run across hosts (config_job.py)
    "topology": TOPOLOGY,
    "run": RUN,
    "restart": RESTART,
    "scheduler": None,  # direct | slurm (config_slurm.py)
    "slurm": SLURM,
}
# [alerts] values (per-code tables among them) are checked by alert_config.py.
ALERTS: Schema = {
    "command": None,
    "webhook": None,
    "topic": None,
    "on": None,
    "min_interval_s": ANY,
    "log_lines": None,
    "timeout_s": None,
    "terminal": None,
}
RECORD: Schema = {"enabled": None, "max_mib": None, "segment_s": None}
# [thresholds]: the diagnosis' named settings (tui/core/diagnosis/thresholds.py, whose fields a
# test holds equal to this list); each a number.
THRESHOLD_KEYS = (
    "near_zero_mib",
    "high_util_pct",
    "activity_util_pct",
    "near_oom_fraction",
    "throttle_mask",
    "persist_s",
    "no_progress_factor",
    "no_progress_min_s",
    "start_window_s",
    "startup_grace_s",
    "log_grace_s",
    "host_mem_low_fraction",
    "swap_used_fraction",
    "disk_low_fraction",
    "disk_full_horizon_s",
    "checkpoint_stale_s",
    "worker_stall_factor",
    "worker_stall_min_s",
)
THRESHOLDS: Schema = dict.fromkeys(THRESHOLD_KEYS)
# [keys]: the app's binding ids (each main-screen key's, tui/app/screens/main.py, which a test holds
# equal to this list); each set to the key(s) that replace its default.
KEY_IDS = (
    "launch",
    "kill",
    "restart",
    "kill_process",
    "auto_restart",
    "refresh",
    "filter",
    "toggle_filter",
    "follow",
    "search",
    "search_next",
    "search_previous",
    "wrap",
    "save_view",
    "pager",
    "focus_next",
    "next_theme",
    "other_tab",
    "whole_machine",
    "gpu_procs",
    "compact",
    "zoom",
    "help",
    "quit",
    "next_host",
    "prev_host",
    "history_zoom",
    "history_earlier",
    "history_later",
)
KEYS: Schema = dict.fromkeys(KEY_IDS)
TOP: Schema = {
    "host": HOST,
    "hosts": HOST,
    "topology": TOPOLOGY,
    "run": RUN,
    "restart": RESTART,
    "scheduler": None,
    "slurm": SLURM,
    "alerts": ALERTS,
    "record": RECORD,
    "thresholds": THRESHOLDS,
    "keys": KEYS,
    "jobs": ANY,  # [jobs.NAME]: a job's rendezvous; its keys are checked by config_job.py
}


class ConfigError(ValueError):
    """A config file or flag value that cannot be used; the message says which and why."""


def unknown_keys(table: dict[str, Any], schema: Schema = TOP, where: str = "") -> list[str]:
    """One sentence per unknown table or key in ``table`` (a parsed TOML document), in order."""
    problems: list[str] = []
    for key, value in table.items():
        name = f"{where}.{key}" if where else key
        if key not in schema:
            problems.append(_unknown(key, value, schema, where))
            continue
        sub = schema[key]
        if not isinstance(sub, dict):
            continue  # a value, or a free-form table: its own check reads it
        if isinstance(value, dict):
            problems += unknown_keys(value, sub, name)
        elif isinstance(value, list):  # [[hosts]]
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    problems += unknown_keys(item, sub, f"{name}[{i}]")
    return problems


def _unknown(key: str, value: Any, schema: Schema, where: str) -> str:
    kind = "table" if isinstance(value, dict) or _tables(value) else "key"
    full = f"{where}.{key}" if where else key
    near = difflib.get_close_matches(key, list(schema), n=1, cutoff=0.6)
    hint = f"did you mean {_quoted(where, near[0])}?" if near else "known: " + ", ".join(schema)
    return f"unknown {kind} {_quoted('', full)} ({hint})"


def _tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _quoted(where: str, key: str) -> str:
    return repr(f"{where}.{key}" if where else key)


def check_keys(doc: dict[str, Any], source: str) -> None:
    """Raise one ConfigError naming every unknown table and key of ``doc``."""
    problems = unknown_keys(doc)
    if problems:
        raise ConfigError(f"config {source}: " + "; ".join(problems))
