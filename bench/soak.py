#!/usr/bin/env python3
"""Soak: the app, then ``supervise`` with the flight recorder on, fed by a scripted live feed at
20 samples a second for --minutes (30: 36,000 samples, about ten hours of a run at 1 Hz).

The feed is bench/soak_feed.py standing where the probe runs (DFLASH_TUI_PYTHON names a
script that starts it): 8 moving H200s, a machine of 100 processes, runs starting and ending
(every other one crashing), findings coming and going, 3 logs at 50 lines a second each, a
step a sample. Each sample is one second of the feed's clock, so what is kept by time sees the
hours. Both the app (``dflash-tui --run-root R --config C`` in a 120x40 pty whose master a
thread drains, bench/monitor_cost.py's ``running``) and ``dflash-tui supervise --run-root R
--config C`` record (``[record] max_mib = --cap-mib``, ``segment_s = 300``: 300 samples a
segment), each in a run root of its own.

At the end of each tenth of the run: the process's own RSS (VmRSS; the feed is a child of its
own and not counted), its CPU per sample over that tenth (its utime+stime over the samples the
feed gave in it), and the largest recording of one run against the cap: its closed segments,
which the recorder holds under the cap at each rotation, and with the open one, which grows
until the next. The goals: RSS after the first tenth grows at most 10 MiB to the end; CPU per
sample in the last tenth within 10 % of the second tenth; no recording's closed segments over
the cap.

    .venv/bin/python bench/soak.py [--minutes 30] [--rate 20] [--what app,supervise]
        [--cap-mib 1] [--run-samples 3000] [--no-record] [--out DIR] [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

from monitor_cost import CLK_TCK, WORK, Monitor, dflash_monitor, own_ticks, running  # noqa: E402

FEED = ROOT / "bench" / "soak_feed.py"
GOAL_RSS_MIB = 10.0
GOAL_CPU = 0.10
MIB = 2**20


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fed(state: Path) -> int:
    """Samples the feed has given so far (it keeps the count every second)."""
    try:
        return int(state.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def record_sizes(run_root: Path) -> dict[str, tuple[int, int]]:
    """Bytes of each recording under the run root (``<run>/record``, ``.record``): all its
    segments, and all but the newest (the one a live writer still writes). The recorder holds
    the closed ones under the cap at each rotation (docs/record.md, "Bounded"); the open one
    grows until the next."""
    out = {}
    for rec in [*run_root.glob("*/record"), run_root / ".record"]:
        if not rec.is_dir():
            continue
        sizes = [f.stat().st_size for f in sorted(rec.glob("seg-*")) if f.is_file()]
        out[str(rec.relative_to(run_root))] = (sum(sizes), sum(sizes[:-1]))
    return out


def setup(home: Path, args: argparse.Namespace) -> tuple[Path, Path, dict[str, str]]:
    """The run root, the config, and the environment pointing the probe at the feed."""
    run_root, state = home / "runs", home / "feed.state"
    run_root.mkdir(parents=True)
    config = home / "soak.toml"
    enabled = "false" if args.no_record else "true"
    config.write_text(f"[record]\nenabled = {enabled}\nmax_mib = {args.cap_mib}\nsegment_s = 300\n")
    starter = home / "feed.sh"
    feed = [sys.executable, str(FEED), "--rate", f"{args.rate:g}", "--run-root", str(run_root)]
    feed += ["--state", str(state), "--run-samples", str(args.run_samples)]
    starter.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in feed) + ' "$@"\n')
    starter.chmod(0o755)
    return run_root, config, {"DFLASH_TUI_PYTHON": str(starter)}


def monitor(what: str, home: Path, args: argparse.Namespace) -> tuple[Monitor, Path, Path]:
    run_root, config, env = setup(home, args)
    common = ["--run-root", str(run_root), "--config", str(config)]
    mon = dflash_monitor(what, args.tree, home / "m", dict(os.environ) | env, common)
    if what == "supervise":
        head = [sys.executable, "-m", "dflash_tui.cli.main", "supervise"]
        mon = Monitor(what, lambda s: [*head, "--interval", f"{s:g}", *common], mon.env)
    return mon, run_root, home / "feed.state"


def soak(what: str, args: argparse.Namespace) -> list[dict[str, float]]:
    """One process soaked: a row at the end of each tenth."""
    home = Path(tempfile.mkdtemp(prefix=f"soak-{what}-", dir=WORK))
    mon, run_root, state = monitor(what, home, args)
    rows: list[dict[str, float]] = []
    total = args.minutes * 60
    try:
        with running(mon, 0.5) as (p, _):
            t0, c0, n0 = time.monotonic(), own_ticks(p.pid), fed(state)
            for tenth in range(1, 11):
                time.sleep(max(0.0, t0 + total * tenth / 10 - time.monotonic()))
                if p.poll() is not None:
                    raise SystemExit(f"{what} exited with {p.returncode} in tenth {tenth}")
                c1, n1 = own_ticks(p.pid), fed(state)
                sizes = record_sizes(run_root)
                rows.append(
                    {
                        "tenth": tenth,
                        "elapsed_s": time.monotonic() - t0,
                        "samples": n1,
                        "rss_mib": rss_mib(p.pid),
                        "cpu_ms_per_sample": 1000 * (c1 - c0) / CLK_TCK / max(n1 - n0, 1),
                        "record_max_mib": max((a for a, _ in sizes.values()), default=0) / MIB,
                        "closed_max_mib": max((c for _, c in sizes.values()), default=0) / MIB,
                        "recordings": len(sizes),
                    }
                )
                print(f"  {what} " + json.dumps(rows[-1]), flush=True)
                c0, n0 = c1, n1
        supervisor = run_root / "supervisor.json"
        if supervisor.exists():
            doc = json.loads(supervisor.read_text())
            rows[-1] |= {"seen": doc.get("samples", 0), "recorded": doc.get("recorded", 0)}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return rows


def verdict(rows: list[dict[str, float]], cap_mib: float) -> dict[str, float | bool]:
    growth = rows[-1]["rss_mib"] - rows[0]["rss_mib"]
    cpu = rows[-1]["cpu_ms_per_sample"] / rows[1]["cpu_ms_per_sample"]
    closed = max(r["closed_max_mib"] for r in rows)
    return {
        "rss_growth_mib": growth,
        "rss_ok": growth <= GOAL_RSS_MIB,
        "cpu_last_vs_second": cpu,
        "cpu_ok": abs(cpu - 1) <= GOAL_CPU,
        "record_max_mib": max(r["record_max_mib"] for r in rows),
        "closed_max_mib": closed,
        "record_ok": closed <= cap_mib,
    }


def report(what: str, rows: list[dict[str, float]], args: argparse.Namespace) -> str:
    v = verdict(rows, args.cap_mib)
    lines = [
        f"**{what}**",
        "",
        "| tenth | minutes | samples | samples/s in it | RSS MiB | CPU ms a sample | largest "
        "recording MiB (its closed segments) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    prev_n, prev_t = 0.0, 0.0
    for r in rows:
        rate = (r["samples"] - prev_n) / (r["elapsed_s"] - prev_t)
        prev_n, prev_t = r["samples"], r["elapsed_s"]
        lines.append(
            f"| {r['tenth']:.0f} | {r['elapsed_s'] / 60:.1f} | {r['samples']:.0f} | {rate:.1f} | "
            f"{r['rss_mib']:.1f} | {r['cpu_ms_per_sample']:.2f} | {r['record_max_mib']:.2f} "
            f"({r['closed_max_mib']:.2f}) |"
        )
    lines += [
        "",
        f"RSS from the end of the first tenth to the end: {v['rss_growth_mib']:+.1f} MiB "
        f"(goal <= {GOAL_RSS_MIB:g}: {'met' if v['rss_ok'] else 'NOT met'}); CPU a sample, last "
        f"tenth / second: {v['cpu_last_vs_second']:.2f}x (goal within {100 * GOAL_CPU:g} %: "
        f"{'met' if v['cpu_ok'] else 'NOT met'}); closed segments of a recording at most "
        f"{v['closed_max_mib']:.2f} MiB of a {args.cap_mib:g} MiB cap "
        f"({'within' if v['record_ok'] else 'OVER'}), with the open one "
        f"{v['record_max_mib']:.2f} MiB",
    ]
    if "seen" in rows[-1]:
        lines.append(
            f"supervisor.json: {rows[-1]['seen']:.0f} samples seen, {rows[-1]['recorded']:.0f} "
            "recorded"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="each soak's length")
    ap.add_argument("--rate", type=float, default=20.0, help="samples a second")
    ap.add_argument("--what", default="app,supervise", help="app, supervise or both")
    ap.add_argument("--cap-mib", type=int, default=1, help="[record] max_mib (>= 1)")
    ap.add_argument(
        "--run-samples", type=int, default=3000, help="a run's length in samples (then a gap)"
    )
    ap.add_argument(
        "--no-record",
        action="store_true",
        help="[record] enabled = false: what the recorder adds to the process's memory",
    )
    ap.add_argument("--out", type=Path, help="write the rows as JSON and the tables here")
    ap.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        help="the dflash-tui soaked: a checkout (folders tui and dflash; default this one)",
    )
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    texts, docs = [], {}
    for what in args.what.split(","):
        docs[what] = soak(what, args)
        texts.append(report(what, docs[what], args))
    text = "\n\n".join(texts) + (
        f"\n\n{args.minutes:g} minutes each at {args.rate:g} samples/s, {os.cpu_count()} CPU "
        f"cores{', recorder off' if args.no_record else ''}\n"
    )
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak.json").write_text(
            json.dumps({"args": vars(args), "rows": docs}, default=str)
        )
        (args.out / "soak.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
