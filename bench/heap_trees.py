"""What bench/history_memory.py and bench/tail_memory.py share: each tree's heap figure taken
in a fresh interpreter that imports ``dflash_tui`` from that tree (links to its ``tui`` and
``dflash``: bench/monitor_cost.py's ``link_farm``), the trees interleaved ``repeats`` times
(their order reversed every other time), and the medians as a Markdown table (per host and
for ``hosts`` hosts)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from monitor_cost import in_turn, link_farm  # the tree's packages as links, checked


def arguments(ap: argparse.ArgumentParser) -> None:
    """The options both scripts take besides their own."""
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--trees", help="comma-separated checkouts to compare (default: this one)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child run


def trees_of(args: argparse.Namespace, root: Path) -> list[Path]:
    return [Path(t).resolve() for t in args.trees.split(",")] if args.trees else [root]


def compare(script: str, child_args: list[str], trees: list[Path], repeats: int) -> list[float]:
    """Median MiB of each tree: ``script --one CHILD_ARGS`` prints ``{"mib": ...}``."""
    work = Path(tempfile.mkdtemp(prefix=f"{Path(script).stem}-"))
    farms = [link_farm(t, work / str(i)) for i, t in enumerate(trees)]
    got: list[list[float]] = [[] for _ in trees]
    for rep in range(repeats):
        for i, farm in in_turn(list(enumerate(farms)), rep):  # A, B, then B, A
            env = dict(os.environ, PYTHONPATH=str(farm))
            argv = [sys.executable, script, "--one", *child_args]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            got[i].append(json.loads(out.stdout)["mib"])
    return [statistics.median(g) for g in got]


def table(what: str, trees: list[Path], mibs: list[float], hosts: int) -> None:
    print(f"| tree | {what} | {hosts} hosts MiB |")
    print("| --- | --- | --- |")
    for tree, mib in zip(trees, mibs, strict=True):
        print(f"| {tree} | {mib:.2f} | {mib * hosts:.0f} |")
