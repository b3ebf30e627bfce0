#!/usr/bin/env python3
"""Where the soak's memory goes: the app headless (Textual's ``run_test``, 120x40) fed the
samples of bench/soak_feed.py as fast as it draws them, tracemalloc's top growth between two
points, the process's RSS at each, and the widgets alive outside the DOM at each (removed
from the screen but still held: what grew with the runs before, a finished run's log tail
kept by a theme watcher on the app, the footer's old keys by their ``data_bind``).

The app gets a scripted source (app/source.py's ScriptedSource), so nothing is recorded (a
scripted view records nothing): what grows here is the app's own state and widgets. The
samples are soak_feed's (runs starting and ending, findings coming and going, 3 logs at 2-3
lines a sample), one second of the feed's clock each.

    .venv/bin/python bench/soak_heap.py [--samples 6000] [--from 1000] [--top 15]
        [--run-samples 3000] [--frames 1]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

import soak_feed  # noqa: E402
from textual.widget import Widget  # noqa: E402

from dflash_tui.app.app import DflashApp  # noqa: E402
from dflash_tui.app.host.source import ScriptedSource  # noqa: E402
from dflash_tui.core.base.config_types import Config  # noqa: E402
from dflash_tui.core.base.snapshot import Snapshot  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def held_widgets(app: DflashApp) -> Counter[str]:
    """Widgets alive but in no screen's DOM, by type, after a full collection."""
    gc.collect()
    shown = {id(w) for screen in app.screen_stack for w in screen.query("*")}
    shown |= {id(screen) for screen in app.screen_stack} | {id(app)}
    held = (o for o in gc.get_objects() if isinstance(o, Widget) and id(o) not in shown)
    return Counter(type(w).__name__ for w in held)


def feed_args(run_root: str, run_samples: int) -> argparse.Namespace:
    return argparse.Namespace(
        rate=20.0, step=1.0, run_root=run_root, run_samples=run_samples, gap_samples=100,
        procs=100, busy_procs=20, lines_per_s=50.0,
    )  # fmt: skip


async def soak(args: argparse.Namespace) -> None:
    run_root = tempfile.mkdtemp(prefix="soak-heap-")
    fa = feed_args(run_root, args.run_samples)
    tl, base, t0 = soak_feed.Timeline(fa), soak_feed.machine_procs(fa.procs), time.time()
    source = ScriptedSource()
    app = DflashApp(Config(), source=source)
    first = None
    async with app.run_test(size=(120, 40)):
        for i in range(args.samples):
            source.push(Snapshot.from_dict(soak_feed.sample(fa, tl, base, i, t0 + i, t0)))
            while app.samples <= i:
                await asyncio.sleep(0.001)
            if i + 1 == args.start:
                tracemalloc.start(args.frames)
                first = tracemalloc.take_snapshot()
                print(f"sample {i + 1}: RSS {rss_mib():.1f} MiB", flush=True)
                print(f"  widgets held outside the DOM: {dict(held_widgets(app))}", flush=True)
            if (i + 1) % 1000 == 0:
                print(f"sample {i + 1}: RSS {rss_mib():.1f} MiB", flush=True)
        assert first is not None
        last = tracemalloc.take_snapshot()
        print(f"sample {args.samples}: widgets held outside the DOM: {dict(held_widgets(app))}")
    stats = last.compare_to(first, "traceback")
    total = sum(s.size_diff for s in stats)
    print(f"traced growth from sample {args.start} to {args.samples}: {total / 2**20:+.2f} MiB")
    for s in stats[: args.top]:
        print(f"{s.size_diff / 2**20:+.2f} MiB in {s.count_diff:+d} blocks")
        for frame in s.traceback.format()[-args.frames * 2 :]:
            print("    " + frame)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=6000)
    ap.add_argument("--from", dest="start", type=int, default=1000, help="first heap snapshot")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--frames", type=int, default=1, help="tracemalloc's frames (slower)")
    ap.add_argument("--run-samples", type=int, default=3000)
    asyncio.run(soak(ap.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
