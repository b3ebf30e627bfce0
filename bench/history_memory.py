#!/usr/bin/env python3
"""What a host's History tab holds once its series are full: one ``RunHistory`` (the pane
store's, tui/app/host/store.py) fed --samples samples of 8 GPUs at 1 Hz (24 GPU series:
utilisation, memory, power) and a run's step points (loss, tok/s), its Python heap measured by
tracemalloc, per host and for --hosts hosts. With --trees A,B each checkout (folders holding
``tui``) runs in a fresh interpreter, interleaved --repeats times; medians.

    .venv/bin/python bench/history_memory.py [--samples 4096] [--hosts 64] [--trees DIR,DIR]
        [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from heap_trees import arguments, compare, table, trees_of

ROOT = Path(__file__).resolve().parents[1]


def one(samples: int) -> float:
    """MiB of heap one host's RunHistory holds after ``samples`` samples."""
    import tracemalloc

    from dflash_tui.core.base.snapshot import Snapshot, StepPoints
    from dflash_tui.core.diagnosis.history import RunHistory

    gpus = [
        {"index": i, "util": 90, "mem_used_mib": 60000, "mem_total_mib": 143771, "power_w": 300.0}
        for i in range(8)
    ]
    base = Snapshot.from_dict({"time": 0.0, "gpus": gpus})
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    hist = RunHistory()
    for i in range(samples):
        moved = tuple(
            g.__class__(**{**g.__dict__, "util": 50 + (i + g.index) % 50}) for g in base.gpus
        )
        steps = StepPoints(
            path="/run/events.jsonl",
            start=i,
            points=((float(i), i, 2.0 - i / samples, 2700.0 + i % 90),),
        )
        hist.add(
            base.__class__(**{**base.__dict__, "time": float(i), "gpus": moved, "steps": steps})
        )
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert hist is not None
    return held / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=4096)
    arguments(ap)
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"mib": one(args.samples)}))
        return 0
    trees = trees_of(args, ROOT)
    mibs = compare(__file__, ["--samples", str(args.samples)], trees, args.repeats)
    table(f"MiB a host after {args.samples:,} samples", trees, mibs, args.hosts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
