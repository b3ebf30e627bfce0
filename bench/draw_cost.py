#!/usr/bin/env python3
"""The app's own CPU per drawn sample, without the probe or the machine's process table:
DflashApp headless at 120x40 fed by a ScriptedSource with the seed incident's host (8 GPUs),
every GPU's utilisation, memory, power and temperature moving each sample, and the process
CPU time (``time.process_time``) over --samples after a warmup. A sample is counted once
the app has taken it and its screen update has run (a wait of three frames, asleep: a
``pilot.pause`` posts a callback to every widget and would be most of what is measured).

With --trees A,B (folders holding a checkout: ``tui`` and ``dflash``) each tree runs in a
fresh interpreter (imported through a folder of links, as bench/monitor_cost.py does),
interleaved --repeats times: A, B, then B, A, ... The figure is the median ms of CPU a sample.
What this leaves out (the probe reading /proc, a process tree that changes, the terminal
write) is what makes bench/monitor_cost.py noisy on a shared machine.

``--present N``: only GPUs 0..N-1 are in the samples, the others of the 8-panel topology
missing (a 1-GPU machine under the default topology, as the GPU host's comparison with nvitop
runs: ``--present 1``).

    .venv/bin/python bench/draw_cost.py [--trees DIR,DIR] [--samples 200] [--repeats 3]
        [--present 8]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from monitor_cost import in_turn, link_farm  # the tree's packages as links, checked

ROOT = Path(__file__).resolve().parents[1]
FRAME_WAIT = 0.05  # seconds after a sample is taken: its screen update has run by then


def moving(samples: int, present: int = 8) -> list[object]:
    """The seed incident's last sample, every GPU's readings moved each time; only GPUs
    below ``present`` in it."""
    from dflash_tui.app import scenes

    last = scenes.seed_incident()[-1]
    out = []
    for k in range(samples):
        gpus = tuple(
            dataclasses.replace(
                g,
                util=(k * 7 + g.index * 13) % 101,
                mem_used_mib=20_000 + 977 * ((k + g.index * 3) % 10),
                power_w=300.0 + 37 * ((k + g.index) % 10),
                temp_c=60 + (k + g.index) % 4,
            )
            for g in last.gpus
            if g.index < present
        )
        out.append(dataclasses.replace(last, time=last.time + 1 + k, gpus=gpus))
    return out


async def one_run(samples: int, warmup: int, present: int) -> float:
    """ms of process CPU a sample, in this interpreter."""
    from dflash_tui.app import scenes
    from dflash_tui.app.app import DflashApp

    try:
        from dflash_tui.app.host.source import ScriptedSource
    except ImportError:  # a tree from before the app's folders by role (--trees)
        from dflash_tui.app.source import ScriptedSource  # type: ignore[no-redef]
    from dflash_tui.core.base.config import Config  # this path in older trees too (--trees)

    seed = scenes.seed_incident()
    source = ScriptedSource(seed)
    app = DflashApp(Config(), source=source)
    snaps = moving(warmup + samples, present)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < len(seed):
            await pilot.pause(0.05)
        start_cpu = 0.0
        for i, snap in enumerate(snaps):
            if i == warmup:
                start_cpu = time.process_time()
            before = app.samples
            source.push(snap)  # type: ignore[arg-type]
            while app.samples == before:
                await asyncio.sleep(0.005)
            # The screen's update (a frame is 1/60 s) then runs. Not pilot.pause(): it posts
            # a callback to every widget, which would be most of what is measured.
            await asyncio.sleep(FRAME_WAIT)
        return (time.process_time() - start_cpu) * 1000 / samples


def interleaved(
    trees: list[Path], samples: int, warmup: int, repeats: int, present: int
) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="draw-cost-"))
    farms = [link_farm(t, work / str(i)) for i, t in enumerate(trees)]
    runs: dict[str, list[float]] = {str(t): [] for t in trees}
    for rep in range(repeats):
        for tree, farm in in_turn(list(zip(trees, farms, strict=True)), rep):
            env = dict(os.environ, PYTHONPATH=str(farm))
            argv = [sys.executable, __file__, "--one", "--samples", str(samples)]
            argv += ["--warmup", str(warmup), "--present", str(present)]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            ms = json.loads(out.stdout.strip().splitlines()[-1])["ms_per_sample"]
            runs[str(tree)].append(ms)
            print(f"  rep {rep + 1} {tree}: {ms:.2f} ms a sample", flush=True)
    return {tree: statistics.median(v) for tree, v in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", help="comma-separated checkouts to compare (default: this one)")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--present", type=int, default=8, help="GPUs in the samples (of 8)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child run
    args = ap.parse_args()
    if args.one:
        ms = asyncio.run(one_run(args.samples, args.warmup, args.present))
        print(json.dumps({"ms_per_sample": ms}))
        return
    trees = [Path(t) for t in args.trees.split(",")] if args.trees else [ROOT]
    medians = interleaved(trees, args.samples, args.warmup, args.repeats, args.present)
    first = next(iter(medians.values()))
    for tree, ms in medians.items():
        print(f"{tree}: {ms:.2f} ms a sample (median), {ms / first:.2f}x the first")


if __name__ == "__main__":
    main()
