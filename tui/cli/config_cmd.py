"""``dflash-tui config``: which config file is in force and what it sets for each host, after
the flags; ``--example`` prints the commented example (docs/config.example.toml)."""

from __future__ import annotations

import argparse
import shlex
import sys
from importlib import resources

from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.control.slurm.batch import sbatch_args

EXAMPLE = "config.example.toml"  # package data of dflash_tui.cli; docs/ links to it


def example_text() -> str:
    return resources.files("dflash_tui.cli").joinpath(EXAMPLE).read_text(encoding="utf-8")


def print_example() -> int:
    sys.stdout.write(example_text())
    return 0


def _host_lines(h: HostConfig) -> list[str]:
    where = h.address or "this machine"
    if h.container:
        where += f", container {h.container}"
    r = h.restart
    auto = f"on (retries {r.retries}, backoff {r.backoff_s:g}-{r.max_backoff_s:g} s)"
    lines = [
        f"host {h.label}: {where}",
        f"  topology  {h.topology.spec()}",
        f"  command   {h.command}",
        f"  workdir   {h.workdir or '(where the launcher runs)'}",
        f"  run root  {h.run_root}",
        f"  logs      {', '.join(h.logs) or '(only the run log)'}",
        f"  auto-restart {auto if r.enabled else 'off'}; keep runs {h.keep_runs or 'all'}",
    ]
    lines += [f"  env       {k}={v}" for k, v in h.env]
    if h.compile_cache:
        lines.append(f"  compile cache {h.compile_cache}")
    if h.scheduler == "slurm":
        lines.append(f"  scheduler slurm: sbatch {shlex.join(sbatch_args(h))}")
        lines.append(f"            nodes read through {h.slurm.node_access}")
    return lines


def summary(cfg: Config) -> list[str]:
    """What the config in force sets, one host after the other (plain text, never markup)."""
    head = f"config {cfg.source}" if cfg.source else "no config file: defaults and flags only"
    return [head, *(ln for h in cfg.hosts for ln in _host_lines(h))]


def run_config(cfg: Config, args: argparse.Namespace) -> int:
    print("\n".join(summary(cfg)))
    return 0
