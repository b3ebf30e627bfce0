"""Log flood benchmark: 100,000 lines through the app at 120x40, headless.

Measures how long the app takes to take in and draw the flood, how long a key waits while it
does, and what memory the process holds afterwards. Run: ``.venv/bin/python bench/log_flood.py
[--lines N] [--batch N] [--text T]``. Batches stand for probe samples (the probe caps one sample
at 4 MiB). Without PYTHONPATH it measures the installed tree; with PYTHONPATH=$PWD/.pyshim (the
import-name links) the worktree's: the first line of its output says which.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import time

from textual import events

import dflash_tui
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.area import LogArea
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config import Config  # this path in older trees too (alternating)
from dflash_tui.core.base.snapshot import Snapshot


def snap(t: float, lines: list[str]) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "telemetry": {"source": "none"},
            "procs": [{"pid": 1, "ppid": 0, "cmd": "init"}],
            "logs": [{"path": "/w/out.log", "exists": True, "lines": lines, "is_run_log": True}],
        }
    )


async def key_latency(app: DflashApp, area: LogArea) -> float:
    """Seconds from a key's arrival to its action having run (``f``: follow on/off)."""
    before, t = area.follow, time.monotonic()
    app.post_message(events.Key("f", "f"))
    while area.follow is before:
        await asyncio.sleep(0.002)
    return time.monotonic() - t


async def flood(
    total: int, batch: int, filtered: bool, text: str = "step={n} loss=1.25 tok/s=2.8K"
) -> dict[str, float]:
    source = ScriptedSource([snap(0.0, ["start"])])
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 1:
            await pilot.pause(0.01)
        if not filtered:
            await pilot.press("a")
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.monotonic()
        n = 0
        while n < total:
            k = min(batch, total - n)
            source.push(snap(1.0 + n, [text.format(n=n + i) for i in range(k)]))
            n += k
        samples = 1 + (total + batch - 1) // batch
        key_waits = []
        area = app.screen.query_one(LogArea)
        while app.samples < samples:
            key_waits.append(await key_latency(app, area))
        took = time.monotonic() - t0
        await pilot.pause(0.1)
        tail = app.screen.query_one(LogTail)
        return {
            "lines": total,
            "seconds": took,
            "lines_per_s": total / took,
            "key_max_s": max(key_waits, default=0.0),
            "keys_answered": len(key_waits),
            "kept_lines": len(tail.store.lines),
            "drawn_lines": tail.log_view.line_count,
            "max_rss_mib_before": rss0 / 1024,
            "max_rss_mib_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--all-lines", action="store_true", help="filter off (draw every line)")
    ap.add_argument(
        "--text",
        default="step={n} loss=1.25 tok/s=2.8K",
        help="each line, {n} its number (e.g. '[rank0] W: retrying {n}': no metric, filtered out)",
    )
    args = ap.parse_args()
    # The tree measured: the installed one, or the one PYTHONPATH's import-name links point to.
    tree = os.path.dirname(os.path.dirname(os.path.realpath(dflash_tui.__file__)))
    print(f"{'tree':>20}: {tree}")
    res = asyncio.run(flood(args.lines, args.batch, not args.all_lines, args.text))
    for k, v in res.items():
        print(f"{k:>20}: {v:,.2f}" if isinstance(v, float) else f"{k:>20}: {v:,}")


if __name__ == "__main__":
    main()
