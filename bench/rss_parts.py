#!/usr/bin/env python3
"""Where a monitor's resident memory goes: nvitop and dflash-tui of this checkout, each in a
120x40 pty at one interval (as bench/monitor_cost.py starts them), read after --seconds from
/proc/PID/status (VmRSS = RssAnon + RssFile + RssShmem) and /proc/PID/smaps (the mapped files
with the most resident pages: the Python runtime, NVML's library, extension modules).

``--env NAME=VALUE`` (repeatable) runs dflash-tui once more with that environment added, beside
the plain run (e.g. MALLOC_ARENA_MAX=2: fewer glibc arenas for the app's threads).

    python3 bench/rss_parts.py [--seconds 20] [--interval 0.5] [--topology 0:] [--env N=V]

On a host without nvidia-smi the stand-in of tests/fakes plays the GPUs through the fake
pynvml (``--gpu nvml`` of monitor_cost.py); the figures then lack NVML's real library.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import monitor_cost as mc


def status_parts(pid: int) -> dict[str, int]:
    """VmRSS and its parts in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def top_files(pid: int, n: int = 8) -> list[tuple[int, str]]:
    """The mapped files with the most resident KiB (all their mappings summed)."""
    rss: dict[str, int] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):  # a mapping's first line: range perms ... path
            name = head[5] if len(head) > 5 else "[anon]"
        elif head and head[0] == "Rss:":
            rss[name] = rss.get(name, 0) + int(head[1])
    return sorted(((kib, path) for path, kib in rss.items()), reverse=True)[:n]


def measure(mon: mc.Monitor, interval: float, seconds: float) -> str:
    with mc.running(mon, interval) as (p, _written):
        time.sleep(seconds)
        if p.poll() is not None:
            raise SystemExit(f"{mon.label} exited with {p.returncode}")
        parts = status_parts(p.pid)
        files = top_files(p.pid)
    head = " ".join(f"{k} {v / 1024:.1f}" for k, v in parts.items())
    lines = [f"{mon.label}: {head} MiB"]
    lines += [f"    {kib / 1024:6.1f} MiB {path}" for kib, path in files]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--topology", default="0:")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for a second run")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="rss-", dir=mc.WORK if mc.WORK.is_dir() else None))
    stand_in = None if shutil.which("nvidia-smi") else mc.StandIn(home, nvml=True)
    env = dict(os.environ) | (stand_in.env if stand_in else {})
    try:
        mons = [mc.nvitop_monitor(env)] if shutil.which("nvitop", path=env.get("PATH")) else []
        mons.append(mc.dflash_monitor("dflash-tui", mc.ROOT, home / "a", env, None, args.topology))
        for pair in args.env:
            name, _, value = pair.partition("=")
            extra = mc.dflash_monitor(
                f"dflash-tui {pair}", mc.ROOT, home / "b", env, None, args.topology
            )
            extra.env[name] = value
            mons.append(extra)
        for mon in mons:
            print(measure(mon, args.interval, args.seconds), flush=True)
    finally:
        if stand_in is not None:
            stand_in.close()


if __name__ == "__main__":
    main()
