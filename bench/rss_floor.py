#!/usr/bin/env python3
"""What a monitor's resident memory starts from before it draws anything: each stage in a
fresh interpreter, its VmRSS and RssAnon (MiB), its threads, and whether the CUDA driver
(libcuda) is mapped. The stages: the bare interpreter; ``ssl`` (which asyncio imports, with
libcrypto); ``asyncio``; asyncio and ``textual.app``; and, where NVML answers, ``nvmlInit``
alone (NVML loads the CUDA driver, with a thread of its own) and with asyncio and Textual.
nvitop starts from the NVML line; dflash-tui from the last one.

    python3 bench/rss_floor.py [--runs 3]

Medians of --runs fresh interpreters a stage.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

# Written out here, not imported from rss_parts.py: importing it (and monitor_cost.py, with
# argparse, subprocess, threading) would add its modules to every stage measured.
REPORT = r"""
import json
out = {"threads": 0, "libcuda": False}
with open("/proc/self/status") as f:
    for line in f:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon"):
            out[key] = int(value.split()[0]) / 1024
        elif key == "Threads":
            out["threads"] = int(value)
with open("/proc/self/maps") as f:
    out["libcuda"] = any("libcuda" in line for line in f)
print(json.dumps(out))
"""

NVML = "import pynvml\npynvml.nvmlInit()\npynvml.nvmlDeviceGetHandleByIndex(0)\n"
STAGES = (
    ("bare interpreter", ""),
    ("import ssl", "import ssl\n"),
    ("import asyncio", "import asyncio\n"),
    ("asyncio + textual.app", "import asyncio\nimport textual.app\n"),
    ("nvmlInit", NVML),
    ("nvmlInit + asyncio + textual.app", NVML + "import asyncio\nimport textual.app\n"),
)


def stage(code: str) -> dict[str, float] | None:
    res = subprocess.run([sys.executable, "-c", code + REPORT], capture_output=True, text=True)
    if res.returncode != 0:
        return None  # no NVML here (no driver, or no nvidia-ml-py)
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print("| stage | VmRSS MiB | RssAnon MiB | threads | libcuda mapped |")
    print("| --- | --- | --- | --- | --- |")
    for name, code in STAGES:
        runs = [r for r in (stage(code) for _ in range(args.runs)) if r is not None]
        if not runs:
            print(f"| {name} | - | - | - | (failed: no NVML here) |")
            continue
        rss = statistics.median(r["VmRSS"] for r in runs)
        anon = statistics.median(r["RssAnon"] for r in runs)
        print(
            f"| {name} | {rss:.1f} | {anon:.1f} | {runs[-1]['threads']:.0f} "
            f"| {'yes' if runs[-1]['libcuda'] else 'no'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
