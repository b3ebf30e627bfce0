#!/usr/bin/env python3
"""Where the app's CPU per sample goes: dflash-tui of a tree (this checkout by default) in a
120x40 pty with the fake pynvml's moving GPUs, 8 unless ``--gpus`` (bench/monitor_cost.py's
StandIn and ``running``), sampled by py-spy for --seconds after --warmup, then shared out by
part.

Only stacks that hold the GIL are kept (``py-spy record --gil``): a thread waiting for the
GIL (after a socket write that woke the event loop, a queue put that woke the NVML thread)
otherwise looks busy, and on a 2-core machine shared with others those waits were a fifth
of the samples. The shares are of GIL-holding samples, not of CPU time: C code that releases
the GIL (reading /proc) counts less than it costs. On a noisy machine compare shares between
trees run one after the other, and wall figures only through monitor_cost.py's interleaved
repeats.

    .venv/bin/python bench/profile_app.py [--tree DIR] [--seconds 60] [--interval 0.5]
        [--steady] [--gpus N] [--raw OUT.txt] [--py-spy PATH]

``--raw`` keeps py-spy's raw stacks (one ``frame;frame;... count`` line each) for a closer
look; each part below is the first rule a stack matches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import monitor_cost as mc

# (part, a frame of the stack that puts it there), first match wins.
PARTS = (
    ("terminal writer thread", "WriterThread.run"),
    ("input thread", "run_input_thread"),
    ("recorder", "Recorder.add"),
    ("tracker and timeline", "HostState.fold"),
    ("probe: process table", "Probe.read_procs"),
    ("probe: the rest, and parsing", "LocalFeed._sample"),
    ("screen update (Textual's compositor)", "Screen._on_timer_update"),
    ("GPU board: rows made (RowStatic)", "RowStatic._layout"),
    ("GPU board: panels' boxes", "GpuPanel.rows"),
    ("GPU grid: the rest", "GpuGrid.show"),
    ("findings list", "FindingsList.show"),
    ("process tree", "ProcTree.show"),
    ("a sample's other views", "on_sample_ready"),
)


def parts(raw: Path) -> tuple[Counter[str], int]:
    """Samples per part in py-spy's raw output, and the total."""
    shares: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        part = next((name for name, frame in PARTS if frame in stack), "other")
        shares[part] += n
    return shares, total


def record(args: argparse.Namespace, raw: Path) -> int:
    """Run the app, record it; the CPU ticks of its process tree over the recording."""
    home = Path(tempfile.mkdtemp(prefix="profile-", dir=mc.WORK))
    stand_in = mc.StandIn(home, gpus=args.gpus, steady=args.steady, nvml=True)
    try:
        env = dict(os.environ, **stand_in.env)
        mon = mc.dflash_monitor("app", args.tree, home / "a", env)
        with mc.running(mon, args.interval) as (proc, _written):
            time.sleep(args.warmup)
            start = mc.tree_ticks(proc.pid)
            spy = [args.py_spy, "record", "--gil", "--nonblocking", "-r", str(args.rate)]
            spy += ["-d", str(int(args.seconds)), "--format", "raw", "-o", str(raw)]
            subprocess.run([*spy, "--pid", str(proc.pid)], check=True, capture_output=True)
            return mc.tree_ticks(proc.pid) - start
    finally:
        stand_in.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=mc.ROOT, help="the tree's root (default: this)")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--rate", type=int, default=500, help="py-spy samples a second")
    ap.add_argument("--steady", action="store_true", help="readings that do not move")
    ap.add_argument(
        "--gpus", type=int, default=8, help="stand-in GPUs (1: the GPU host's one card)"
    )
    ap.add_argument("--raw", type=Path, help="keep py-spy's raw stacks here")
    beside = Path(sys.executable).with_name("py-spy")  # the venv's, from the test extra
    ap.add_argument("--py-spy", default=str(beside) if beside.exists() else shutil.which("py-spy"))
    args = ap.parse_args()
    mc.WORK.mkdir(parents=True, exist_ok=True)
    raw = args.raw or Path(tempfile.mkdtemp(dir=mc.WORK)) / "stacks.txt"
    ticks = record(args, raw)
    shares, total = parts(raw)
    samples = args.seconds / args.interval
    print(f"{args.tree}: {ticks / mc.CLK_TCK * 1000 / samples:.1f} ms of CPU a sample")
    print(f"{total} GIL-holding stacks")
    for name, n in shares.most_common():
        print(f"{100 * n / max(total, 1):5.1f} %  {name}")


if __name__ == "__main__":
    sys.exit(main())
