"""The refresh key's latency: from `R` to the new sample drawn, with the real local probe, the
stream at ``--interval 120`` (so every sample counted is the key's), headless at 120x40.

Run: ``.venv/bin/python bench/refresh_now.py [--presses N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from dflash_tui.app.app import DflashApp
from dflash_tui.core.base.config_types import Config, HostConfig


async def measure(presses: int, run_root: str) -> list[float]:
    app = DflashApp(Config(hosts=(HostConfig(run_root=run_root),), interval=120.0))
    out: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        while app.samples < 1:
            await pilot.pause(0.02)
        for _ in range(presses):
            n = app.samples
            t0 = time.monotonic()
            await pilot.press("R")
            while app.samples <= n:
                if time.monotonic() - t0 > 60:
                    raise SystemExit("no sample within 60 s of R")
                await pilot.pause(0.01)
            out.append(time.monotonic() - t0)
            await pilot.pause(0.3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presses", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        took = asyncio.run(measure(args.presses, root))
    print(
        f"R -> sample drawn: median {statistics.median(took):.2f} s, "
        f"min {min(took):.2f}, max {max(took):.2f} (n={len(took)}; stream interval 120 s)"
    )


if __name__ == "__main__":
    main()
