#!/usr/bin/env python3
"""What a user who looks at every host leaves behind: the app's widgets and RSS after every
one of N scripted hosts was shown once (``]`` from the first to the last; ``--passes``: that
many times round), against the same before any host was shown beside the first.

Each measurement is a fresh process (a headless app driven by Textual's Pilot, 120x40): the
hosts are ScriptedSources playing the healthy run of tui/app/scenes.py (8 GPUs, its log with
``--lines`` more lines a sample), every sample delivered before the visit. With
``--baseline-dir`` (the root of another tree, e.g. a ``git archive`` of the commit before)
each repeat runs that tree too, right after this one (imported through a folder of links,
as bench/monitor_cost.py does).

    .venv/bin/python bench/panes_visited.py [--hosts 32] [--passes 1] [--repeats 5]
        [--baseline-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from monitor_cost import in_turn, link_farm  # the tree's packages as links, checked

HERE = Path(__file__).resolve().parent


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def child(hosts: int, samples: int, lines: int, passes: int = 1) -> dict[str, float]:
    from dflash_tui.app import scenes
    from dflash_tui.app.app import DflashApp
    from dflash_tui.app.host.pane import HostPane
    from dflash_tui.app.host.source import ScriptedSource
    from dflash_tui.core.base.config_types import Config, HostConfig

    def script(h: int) -> list[object]:
        out = []
        for k, snap in enumerate(scenes.healthy_run(samples=samples)):
            extra = tuple(f"host {h} sample {k} line {i} step={i}" for i in range(lines))
            log = snap.logs[0]
            out.append(replace(snap, logs=(replace(log, lines=log.lines + extra),)))
        return out

    cfg = Config(hosts=tuple(HostConfig(address=f"gpu-{i:02d}") for i in range(hosts)))
    app = DflashApp(cfg, sources=[ScriptedSource(script(i)) for i in range(hosts)])  # type: ignore[arg-type]
    async with app.run_test(size=(120, 40)) as pilot:
        while not all(s.samples >= samples for s in app.host_states):
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        gc.collect()
        start = (len(app.screen.query("*")), rss_kib())
        for _ in range(passes * hosts - 1):
            await pilot.press("right_square_bracket")
            await pilot.pause(0.05)  # the tails drawn, as a user's look at the host
        await pilot.pause(0.5)
        gc.collect()
        built = sum(p.built for p in app.screen.query(HostPane))
        return {
            "widgets_start": start[0],
            "rss_start_mib": start[1] / 1024,
            "widgets": len(app.screen.query("*")),
            "rss_mib": rss_kib() / 1024,
            "panes_built": built,
        }


def run_one(args: argparse.Namespace, pythonpath: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [sys.executable, str(Path(__file__).resolve()), "--child"]
    argv += ["--hosts", str(args.hosts), "--samples", str(args.samples), "--lines", str(args.lines)]
    argv += ["--passes", str(args.passes)]
    # Not from the checkout's folder: the baseline's links must win over the installed tree.
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--passes", type=int, default=1, help="times through every host")
    ap.add_argument("--lines", type=int, default=200, help="more log lines a sample")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-dir", type=Path)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.hosts, args.samples, args.lines, args.passes))))
        return
    trees: list[tuple[str, str | None]] = [("this tree", None)]
    if args.baseline_dir:
        farm = link_farm(args.baseline_dir, Path(tempfile.mkdtemp(prefix="panes_farm_")))
        trees.append(("before", str(farm)))
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for r in range(args.repeats):
        for name, path in in_turn(trees, r):  # the same load for both, each first in turn
            res = run_one(args, path)
            results[name].append(res)
            print(f"repeat {r + 1} {name}: {res}", file=sys.stderr)
    keys = ("widgets_start", "widgets", "panes_built", "rss_start_mib", "rss_mib")
    print(f"| tree | hosts | {' | '.join(keys)} |")
    print("| --- | --- |" + " --- |" * len(keys))
    for name, runs in results.items():
        cells = []
        for k in keys:
            vals = [x[k] for x in runs]
            med = statistics.median(vals)
            cells.append(
                f"{med:.0f}"
                if k.startswith(("widgets", "panes"))
                else f"{med:.1f} ({min(vals):.1f}-{max(vals):.1f})"
            )
        print(f"| {name} | {args.hosts} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
