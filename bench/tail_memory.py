#!/usr/bin/env python3
"""What a watched host's log tails hold while its pane is not shown: one host's pane store
(tui/app/host/store.py ``PaneStore``, as the app keeps it for every host) fed --samples
samples of a run's three logs at --lines-per-s lines a second each (bench/soak_feed.py's
lines: the run log's step lines, which the default filter shows, and two workers' INFO
lines, which it hides), its Python heap measured by tracemalloc, per host and for --hosts
hosts. With --trees A,B each checkout (folders holding ``tui``) runs in a fresh interpreter,
interleaved --repeats times; medians.

    .venv/bin/python bench/tail_memory.py [--samples 600] [--lines-per-s 50] [--hosts 64]
        [--trees DIR,DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from heap_trees import arguments, compare, table, trees_of

ROOT = Path(__file__).resolve().parents[1]


def one(samples: int, per_s: int) -> float:
    """MiB of heap one never-shown host's log tails hold after ``samples`` samples."""
    import inspect
    import tracemalloc
    from types import SimpleNamespace

    from dflash_tui.app.host.store import PaneStore
    from dflash_tui.core.base.snapshot import Snapshot

    store = PaneStore()
    # A never-shown pane's new logs start shelved; a tree from before shelving has no
    # ``shelve`` to pass (it keeps every tail whole, which is what is compared with).
    hidden = {"shelve": True} if "shelve" in inspect.signature(store.fold_logs).parameters else {}
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(samples):
        run = [f"step={i * per_s + j} loss=1.{j} acc=0.41 tok/s=2812.5" for j in range(per_s)]
        logs = [
            {
                "path": "/runs/r1/train.log",
                "is_run_log": True,
                "exists": True,
                "size": 80 * i,
                "lines": run,
            }
        ] + [
            {
                "path": f"/runs/r1/worker{w}.log",
                "exists": True,
                "size": 80 * i,
                "lines": [f"[rank{w}] INFO shard {i * per_s + j} read" for j in range(per_s)],
            }
            for w in (1, 2)
        ]  # fmt: skip
        snap = Snapshot.from_dict({"time": float(i), "logs": logs})
        # What fold_logs reads of a diagnosis: no log views, no run (the tails' lines alone).
        diag = SimpleNamespace(time=float(i), logs=(), run=None)
        store.fold_logs(snap.logs, diag, **hidden)  # type: ignore[arg-type]
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(store.logs) == 3
    return held / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=600)
    ap.add_argument("--lines-per-s", type=int, default=50)
    arguments(ap)
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"mib": one(args.samples, args.lines_per_s)}))
        return 0
    trees = trees_of(args, ROOT)
    mibs = compare(
        __file__,
        ["--samples", str(args.samples), "--lines-per-s", str(args.lines_per_s)],
        trees,
        args.repeats,
    )
    table(f"MiB a hidden host after {args.samples:,} samples", trees, mibs, args.hosts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
