#!/usr/bin/env python3
"""The app under two faults at once: a webhook that trickles and a crash loop.

The webhook is tests/receiver.py in ``trickle`` mode, a process of its own (so that its
threads are not counted as the app's): it answers the status line, then one byte of its head
every --trickle seconds and never finishes, as a wedged endpoint does. The app (under Textual's
Pilot, 120x40, in this process) runs one local host whose command exits 1 after about a second,
with auto-restart on, retries and the flapping guard set so high that it keeps looping, and
alerts for every restart and crash to that webhook (no rate limit, a send deadline of
--timeout seconds), so that the webhook's lane is always full.

Each second it records: the samples folded in that second, the largest gap between two folded
samples so far (a fold is seen within 20 ms), the Python threads (``threading.active_count()``)
and the process's kernel threads (/proc/self/status ``Threads``), the runs launched and the
alerts that failed. It prints a line every 10 s (every second with --per-second) and a summary:
the largest gap against two intervals, the peak and last thread counts.

    .venv/bin/python bench/app_under_faults.py [--minutes 5] [--interval 1] [--timeout 10]
        [--trickle 1] [--per-second] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dflash_tui.app.app import DflashApp
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from receiver import receiver_process  # noqa: E402

CRASH = "sleep 1; exit 1"  # a crash loop: each run lives about a second


@dataclass
class Second:
    t: float  # seconds since the loop began
    folded: int  # samples folded in this second
    gap_s: float  # the largest gap between two folded samples in this second
    py_threads: int
    os_threads: int
    runs: int  # run directories so far (one per launch)
    alerts_failed: int


@dataclass
class Summary:
    seconds: int
    interval_s: float
    samples: int
    max_gap_s: float
    py_threads_first: int
    py_threads_peak: int
    py_threads_last: int
    os_threads_peak: int
    runs: int
    alerts_failed: int
    loadavg: str


def os_threads() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("Threads:")[1].split()[0])


def make_app(url: str, root: Path, interval: float, timeout: float) -> DflashApp:
    alerts = AlertSettings(
        webhook=url,
        on=("run-exited", "launch-failed", "restart", "fatal"),
        min_interval_s=0.0,
        timeout_s=timeout,
        log_lines=5,
    )
    policy = RestartPolicy(
        enabled=True, retries=10**6, backoff_s=0.2, max_backoff_s=0.5, flap_max=10**6
    )
    host = HostConfig(command=CRASH, run_root=str(root), restart=policy)
    return DflashApp(Config(hosts=(host,), interval=interval, alerts=alerts))


def runs(root: Path) -> int:
    if not root.is_dir():
        return 0
    return sum(1 for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def failed(app: DflashApp) -> int:
    remote = app.alerts.hosts[0].remote
    return remote.failed if remote is not None else 0


async def one_second(app: DflashApp, last_fold: list[float]) -> tuple[int, float]:
    """Watch the app's fold counter for a second: (folds, the largest gap ending in it)."""
    end = time.monotonic() + 1.0
    folded, gap, seen = 0, 0.0, app.samples
    while time.monotonic() < end:
        await asyncio.sleep(0.02)
        now = time.monotonic()
        if app.samples != seen:
            folded += app.samples - seen
            seen = app.samples
            last_fold[0] = now
        gap = max(gap, now - last_fold[0])  # a gap still open counts too
    return folded, gap


async def drive(
    url: str, root: Path, seconds: int, interval: float, timeout: float, per_second: bool
) -> list[Second]:
    app = make_app(url, root, interval, timeout)
    out: list[Second] = []
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.monotonic()
        while app.samples < 1:
            if time.monotonic() - t0 > 60:
                raise RuntimeError("no sample in 60 s")
            await asyncio.sleep(0.05)
        await pilot.press("l")
        start = time.monotonic()
        last_fold = [start]
        for i in range(seconds):
            folded, gap = await one_second(app, last_fold)
            row = Second(
                round(time.monotonic() - start, 2),
                folded,
                round(gap, 3),
                threading.active_count(),
                os_threads(),
                runs(root),
                failed(app),
            )
            out.append(row)
            if per_second or (i + 1) % 10 == 0:
                print(json.dumps(asdict(row)), flush=True)
    return out


def stop_leftovers(root: Path) -> None:
    """The loop's last run may still be alive: kill it through control, as the app would."""

    async def kill() -> None:
        h = HostConfig(run_root=str(root))
        transport = make_transport(h)
        try:
            await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
        finally:
            await transport.close()

    asyncio.run(kill())


def summarize(rows: list[Second], interval: float) -> Summary:
    return Summary(
        seconds=len(rows),
        interval_s=interval,
        samples=sum(r.folded for r in rows),
        max_gap_s=max(r.gap_s for r in rows),
        py_threads_first=rows[0].py_threads,
        py_threads_peak=max(r.py_threads for r in rows),
        py_threads_last=rows[-1].py_threads,
        os_threads_peak=max(r.os_threads for r in rows),
        runs=rows[-1].runs,
        alerts_failed=rows[-1].alerts_failed,
        loadavg=" ".join(f"{x:.1f}" for x in os.getloadavg()),
    )


def run(
    minutes: float,
    interval: float = 1.0,
    timeout: float = 10.0,
    trickle: float = 1.0,
    per_second: bool = False,
) -> tuple[Summary, list[Second]]:
    seconds = max(int(minutes * 60), 1)
    with (
        tempfile.TemporaryDirectory(prefix="dflash-faults-") as tmp,
        receiver_process("trickle", seconds + 120, trickle) as url,
    ):
        root = Path(tmp) / "runs"
        try:
            rows = asyncio.run(drive(url, root, seconds, interval, timeout, per_second))
        finally:
            stop_leftovers(root)
    return summarize(rows, interval), rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--interval", type=float, default=1.0, help="the app's sample interval")
    ap.add_argument("--timeout", type=float, default=10.0, help="the webhook's send deadline")
    ap.add_argument("--trickle", type=float, default=1.0, help="seconds between the bytes")
    ap.add_argument("--per-second", action="store_true", help="print every second's figures")
    ap.add_argument("--json", type=Path, help="write the summary and every second here")
    args = ap.parse_args()
    print(f"load before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    summary, rows = run(args.minutes, args.interval, args.timeout, args.trickle, args.per_second)
    print(json.dumps(asdict(summary), indent=1))
    verdict = "within" if summary.max_gap_s <= 2 * args.interval else "OVER"
    print(
        f"largest gap between samples {summary.max_gap_s:.2f} s: {verdict} two intervals; "
        f"threads {summary.py_threads_first} at the start, peak {summary.py_threads_peak}, "
        f"{summary.py_threads_last} at the end ({summary.os_threads_peak} kernel threads at "
        f"most); {summary.runs} runs launched, {summary.alerts_failed} alerts timed out"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"summary": asdict(summary), "seconds": [asdict(r) for r in rows]})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
