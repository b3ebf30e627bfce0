#!/usr/bin/env python3
"""What one more mounted widget costs in resident memory: the app (the seed incident's scene,
8 GPUs, headless at 120x40) settles, then --count widgets of one kind are mounted on its
screen; the RSS added, divided by the count, is printed per kind (KiB). Many at once: a few
would fit in memory the allocator already holds and read as free.

    python bench/widget_rss.py [--count 400] [--kinds static,input,vertical]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status (Linux only)")


async def one(kind: str, count: int) -> float:
    from textual.containers import Vertical
    from textual.widgets import Input, Static

    from dflash_tui.app import scenes
    from dflash_tui.app.app import DflashApp
    from dflash_tui.app.host.source import ScriptedSource
    from dflash_tui.core.base.config_types import Config

    make = {"static": lambda: Static("x"), "input": Input, "vertical": Vertical}[kind]
    snaps = scenes.seed_incident()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.monotonic()
        while app.samples < len(snaps) and time.monotonic() - t0 < 30:
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        gc.collect()
        before = rss_mib()
        await app.screen.mount_all([make() for _ in range(count)])
        await pilot.pause(0.5)
        gc.collect()
        return (rss_mib() - before) * 1024 / count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--kinds", default="static,input,vertical")
    ap.add_argument("--kind", help=argparse.SUPPRESS)  # one kind, in a fresh process
    args = ap.parse_args()
    if args.kind:
        print(f"{asyncio.run(one(args.kind, args.count)):.1f}")
        return
    for kind in args.kinds.split(","):
        cmd = [sys.executable, __file__, "--kind", kind, "--count", str(args.count)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
        print(f"{kind}: {out.stdout.strip().splitlines()[-1]} KiB a widget ({args.count} mounted)")


if __name__ == "__main__":
    main()
