#!/usr/bin/env python3
"""What the app costs watching N hosts x 8 GPUs over SSH at 1 Hz, for several N in one run, and
whether that grows faster than the hosts: the real loopback OpenSSH sshd of tests/integration
(root, /usr/sbin/sshd), a config with N ``[[hosts]]`` that all reach it (labels h1..hN, one
address, a run root each), the app in a 120x40 pty whose master a thread drains, as
bench/monitor_cost.py runs it (its helpers, imported). One sshd stands for N machines, so it is
given ``MaxStartups`` above N (OpenSSH's default drops connections beyond 10 opening at once).

Inside the sshd's sessions the GPUs are monitor_cost's stand-in: 8 H200s with a real process
each, their readings moving every 0.5 s. ``--gpu nvml`` (default): the fake pynvml, re-reading
the moving scenario (FAKE_NVML_RELOAD), as a host with nvidia-ml-py reads its GPUs in the
probe; ``--gpu smi``: the fake nvidia-smi first on PATH, two Python starts a sample on each
host, which on a small machine takes well over a core and starves the app (it then draws
fewer samples and looks cheaper than it is).

Measured over windows of --seconds after the warm-up (--warmup, plus --warmup-per-host for
each host: every host's probe must be streaming before a window starts): CPU % of a core of
the app's process tree (the client: the app alone, its probes run on the hosts) and of the
sshd's tree (the hosts' side: sshd sessions, probes, the GPU tool), the app's peak RSS, and,
from bench/app_timed.py (the app run with some of its calls timed), the overview's redraw time
(our code: rows summarised, text built), its paint time (Textual laying the text out into the
lines on screen) and how often the GPU grid redraws (one pane is shown: about one redraw a
second at 1 Hz, not one per host). ``--job`` makes the hosts one job's members, whose overview
row moves with every sample of every host (the overview's worst case). A second table says
where a host-sample's CPU goes, from the same app's stages (bench/app_timed.py: the parse, the
tracker, the flight recorder, the sample's hand-over to the pane and the alerts, asyncssh's
receiving, what is left, and CPython's collections by generation). Medians and ranges over
--repeats (and, with --windows K, over the K windows one after the other in each start of the
app, each window's own medians then in a table of their own: the first minutes and after
them); the host counts alternate within a repeat, their order and the trees' reversed every
other repeat (monitor_cost's ``in_turn``). CPU per host divides by N, and its ratio
to the first N is the growth test (1.0: linear); RSS per host added is the slope from the first
N. With --baseline-dir the same against that tree, interleaved. ``--visit N`` shows every
host N times in turn (``]`` pressed into the pty) after the warm-up: the window then says what
the app holds once a user has looked at every host, live over SSH (its RSS before the visit in
a column of its own).

    .venv/bin/python bench/hosts_cost.py [--hosts 8,16,64] [--interval 1] [--seconds 20]
        [--warmup 12] [--warmup-per-host 0.3] [--repeats 3] [--windows 1] [--gpu nvml|smi]
        [--baseline-dir DIR] [--visit N [--visit-pause 0.3] [--settle 60]]
        [--profile app.svg [--gil]]   # py-spy (pip install py-spy) on the app instead
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from app_timed import COLLECTIONS  # noqa: E402
from app_timed import STAGES as STAGE_CALLS  # noqa: E402
from fakes.scenario import FAKES, NVML_FAKE_DIR  # noqa: E402
from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable  # noqa: E402
from monitor_cost import (  # noqa: E402
    WORK,
    Monitor,
    StandIn,
    dflash_monitor,
    in_turn,
    measure,
    running,
    tree,
)


def probes(sshd_pid: int) -> int:
    """Python probes streaming under the sshd now (one per connected host)."""
    n = 0
    for pid in tree(sshd_pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        n += argv[0].rsplit(b"/", 1)[-1].startswith(b"python") and b"--interval" in b" ".join(argv)
    return n


class ProbeCount:
    """The most probes seen under the sshd during one start of the app, its windows in (every
    host must be sampled, or the app's figure is that of fewer hosts)."""

    def __init__(self, sshd_pid: int) -> None:
        self.pid, self.most, self.stop = sshd_pid, 0, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.wait(2.0):
            self.most = max(self.most, probes(self.pid))

    def close(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.most


def write_config(path: Path, hosts: int, runs: Path, job: str | None = None) -> Path:
    """``hosts`` entries on the one sshd alias, each with its own label and run root; with
    ``job``, all members of that job (the overview then has the job's row, which moves with
    every host's step: redrawn on every sample of every host)."""
    lines = []
    for i in range(1, hosts + 1):
        root = runs / f"h{i}"
        root.mkdir(parents=True, exist_ok=True)
        lines += ["[[hosts]]", f'label = "h{i}"', f'address = "{ALIAS}"']
        lines += [f'job = "{job}"'] if job else []
        lines += ["[hosts.run]"]
        lines += [f'run_root = "{root}"', ""]
    path.write_text("\n".join(lines))
    return path


def session_env(stand_in: StandIn, gpu: str) -> dict[str, str]:
    """What the sshd's sessions see: the stand-in's scenario, by nvidia-smi or NVML."""
    env = {"FAKE_SMI_SCENARIO": str(stand_in.path)}
    if gpu == "nvml":
        env |= {"PYTHONPATH": str(NVML_FAKE_DIR), "FAKE_NVML_SCENARIO": str(stand_in.path)}
        env["FAKE_NVML_RELOAD"] = "1"
    return env


@contextmanager
def stand_in_sshd(prefix: str, gpu: str, hosts: int) -> Iterator[tuple[Path, LoopbackSshd]]:
    """The loopback sshd standing for ``hosts`` machines (``MaxStartups`` above that), its
    sessions seeing the stand-in's GPUs by ``gpu`` (nvml or smi), in a fresh folder under WORK:
    (that folder, the server). Stopped, and the folder removed, on exit."""
    WORK.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=prefix, dir=WORK))
    stand_in = StandIn(home)
    server = LoopbackSshd(
        home / "sshd",
        path_prefix=str(FAKES),
        session_env=session_env(stand_in, gpu),
        extra_config=f"MaxStartups {4 * hosts}\n",
    )
    try:
        server.start()
        yield home, server
    finally:
        server.stop()
        stand_in.close()
        shutil.rmtree(home, ignore_errors=True)


APP_TIMED = ROOT / "bench" / "app_timed.py"
Results = dict[tuple[str, int], list[dict[str, float]]]  # (tree, hosts): one dict a window


def monitors(
    args: argparse.Namespace, home: Path, server: LoopbackSshd, hosts: int
) -> list[Monitor]:
    """This tree (and the baseline's) watching ``hosts`` hosts, through bench/app_timed.py."""
    env = dict(os.environ) | server.env
    job = "bench" if args.job else None
    config = write_config(home / f"hosts-{hosts}.toml", hosts, home / "runs", job)
    cli = ["--config", str(config)]
    trees = [("this tree", ROOT, home / "a")]
    if args.baseline_dir:
        trees.append(("baseline", args.baseline_dir, home / "b"))
    out = []
    for label, tree_dir, where in trees:
        mon = dflash_monitor(label, tree_dir, where, env, cli)

        def argv(interval: float, cli: list[str] = cli) -> list[str]:
            return [sys.executable, str(APP_TIMED), "--interval", f"{interval:g}", *cli]

        out.append(Monitor(label, argv, mon.env))
    return out


def profile(mon: Monitor, args: argparse.Namespace) -> None:
    """py-spy (on PATH or beside this python) records the app for one window after the
    warm-up: a flame graph in --profile, or the raw collapsed stacks when it ends in .txt."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    fmt = "raw" if args.profile.suffix == ".txt" else "flamegraph"
    with running(mon, args.interval) as (p, _):
        time.sleep(args.warmup)
        cmd = [spy, "record", "--pid", str(p.pid), "--duration", f"{args.seconds:.0f}"]
        cmd += ["--rate", "200", "--format", fmt, "--output", str(args.profile)]
        cmd += ["--gil"] if args.gil else []
        subprocess.run(cmd, check=True)


def timed_lines(path: Path) -> list[dict[str, Any]]:
    """bench/app_timed.py's lines, one a second."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def within(rows: list[dict[str, Any]], r: dict[str, float]) -> list[dict[str, Any]]:
    """The lines of ``rows`` written within window ``r``'s wall-clock span."""
    return [row for row in rows if r["wall_start"] <= row["t"] <= r["wall_end"]]


def drawing(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The app's drawing calls in ``rows`` (``timed_lines``): the overview's redraws (median
    and 90th percentile ms, per second) and grid redraws a second."""
    calls: list[float] = []
    paints: list[float] = []
    grid, seconds = 0, len(rows)
    for row in rows:
        calls += row.get("overview_s", [])
        paints += row.get("overview_paint_s", [])
        grid += row.get("grid", 0)
    if not seconds:
        return {}
    ms = sorted(1000 * c for c in calls) or [float("nan")]
    paint = sorted(1000 * c for c in paints) or [float("nan")]
    return {
        "overview_ms": statistics.median(ms),
        "overview_p90_ms": ms[int(0.9 * (len(ms) - 1))],
        "overview_per_s": len(calls) / seconds,
        "paint_ms": statistics.median(paint),
        "paint_per_s": len(paints) / seconds,
        "grid_per_s": grid / seconds,
    }


# bench/app_timed.py's stages, none inside another: their sum is taken from the process's CPU.
# Its collections are not: a collection runs inside whichever stage was running, and counts there.
STAGES = tuple(stage[0] for stage in STAGE_CALLS)


def stages(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Where the app's CPU went over ``rows`` (``timed_lines``): the window's host-samples
    (``host_samples``: one ``parse`` each), the process's CPU in ms a host-sample
    (``ms_host_sample``) and each stage's part (``ms_<stage>``), what no stage holds
    (``ms_rest``: the feed's line reading, the timeline, the hand-over to the record thread,
    the loop, Textual's messages, timers and screen updates), and each generation's
    collections (``gcN_per_s``, ``ms_gcN``). A stage the app did not have timed (a
    --baseline-dir tree without that method: bench/app_timed.py's ``missing``) is left out,
    so its cell reads nan and its CPU is in ``ms_rest``."""
    if len(rows) < 2:
        return {}
    # Each line holds the calls since the line before: the first line only marks the start.
    first, rows = rows[0], rows[1:]
    samples = sum(len(r["stages"].get("parse", ())) for r in rows)
    if not samples:
        return {}
    cpu, seconds = rows[-1]["cpu"] - first["cpu"], rows[-1]["t"] - first["t"]
    out = {"host_samples": float(samples), "ms_host_sample": 1000 * cpu / samples}
    timed = [key for key in STAGES + COLLECTIONS if key in rows[-1]["stages"]]
    for key in timed:
        out[f"ms_{key}"] = 1000 * sum(sum(r["stages"][key]) for r in rows) / samples
    out["ms_rest"] = out["ms_host_sample"] - sum(out[f"ms_{k}"] for k in STAGES if k in timed)
    for key in COLLECTIONS:
        out[f"{key}_per_s"] = sum(len(r["stages"].get(key, ())) for r in rows) / seconds
    return out


def visit(
    hosts: int, args: argparse.Namespace, timings: Path, took: dict[str, float]
) -> Callable[[int], None]:
    """The user's visit: ``]`` (the next host) pressed --visit times for every host, --visit-pause
    apart; then a wait until the app has shown a host for every key (``shown``). In ``took``:
    the seconds from the last key to the second in which the last host was shown, and whether
    that came within --settle seconds (``settled``: 1, else 0)."""

    def press(master: int) -> None:
        first = time.time()
        presses = args.visit * hosts
        for _ in range(presses):
            os.write(master, b"]")
            time.sleep(args.visit_pause)
        last = time.time()
        at = shown(timings, first, presses, args.settle)
        time.sleep(1.0)  # the pane shown longest ago loses its widgets after the last show
        # The app's line is written up to a second after the host was shown, and may come
        # before ``last`` (taken after the last key's pause): the app kept up with the keys.
        took["settle_s"] = max(0.0, (at if at is not None else time.time()) - last)
        took["settled"] = float(at is not None)
        if at is None:
            print(f"  the app had not shown {presses} hosts {args.settle:g} s after the last key: "
                  "the window measures the visit still going", flush=True)  # fmt: skip

    return press


def shown(timings: Path, since: float, presses: int, limit: float) -> float | None:
    """The time of the app's per-second line (bench/app_timed.py) by which it had shown a host
    ``presses`` times since ``since``, or None once ``limit`` seconds passed without. Keys
    pressed faster than the app makes panes wait in its queue: a window started while they do
    would measure the visit, not what it left. Each ``]`` shows another host (the next one,
    round the list), so each is one ``shown``. A line the app is still writing is not read."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        time.sleep(0.5)
        text = timings.read_text() if timings.exists() else ""
        count = 0
        for line in text.splitlines(keepends=True):
            if not line.endswith("\n"):
                break
            row = json.loads(line)
            if row["t"] > since:
                count += row.get("shown", 0)
                if count >= presses:
                    return float(row["t"])
    return None


def windows(
    mon: Monitor, args: argparse.Namespace, hosts: int, server: LoopbackSshd, home: Path
) -> list[dict[str, float]]:
    """The --windows measured windows of one start of ``mon`` watching ``hosts`` hosts (every
    host's probe must run), each with the drawing figures and the stages of its own span."""
    assert server.proc is not None
    timings = home / f"timings-{time.monotonic_ns()}.jsonl"
    mon.env["DFLASH_BENCH_TIMINGS"] = str(timings)
    warmup = args.warmup + args.warmup_per_host * hosts
    count = ProbeCount(server.proc.pid)
    took: dict[str, float] = {}
    keys = visit(hosts, args, timings, took) if args.visit else None
    got = measure(
        mon, args.interval, args.seconds, warmup, {"sshd": server.proc.pid}, keys, args.windows
    )
    if count.close() < hosts:
        raise SystemExit(f"{mon.label}: {count.most} of {hosts} hosts' probes ran")
    every = timed_lines(timings)  # read once, shared out by window
    out = []
    for r in got:
        rows = within(every, r)
        out.append(r | took | drawing(rows) | stages(rows) | {"probes": float(count.most)})
    return out


def run(args: argparse.Namespace, counts: list[int]) -> Results:
    results: Results = {}
    with stand_in_sshd("hosts-", args.gpu, max(counts)) as (home, server):
        mons = {n: monitors(args, home, server, n) for n in counts}
        if args.profile:
            profile(mons[counts[0]][0], args)
            return results
        for rep in range(args.repeats):
            for n in in_turn(counts, rep):
                for mon in in_turn(mons[n], rep):  # A, B, then B, A
                    for r in windows(mon, args, n, server, home):
                        results.setdefault((mon.label, n), []).append(r)
                        say(rep, n, mon.label, r, args)
    return results


def say(rep: int, n: int, label: str, r: dict[str, float], args: argparse.Namespace) -> None:
    """One window's line, once the start it belongs to has ended."""
    place = f".{r['window']:.0f}" if args.windows > 1 else ""
    visited = (
        f"; the last host shown {r['settle_s']:.0f} s after the last key"
        + ("" if r["settled"] else " (NOT within --settle)")
        if args.visit
        else ""
    )
    print(
        f"  rep {rep + 1}{place} {n} hosts {label}: app tree {r['cpu_pct']:.2f} % "
        f"(own {r['own_pct']:.2f} %), {r['rss_mib']:.0f} MiB; overview "
        f"{r.get('overview_ms', float('nan')):.2f} ms x "
        f"{r.get('overview_per_s', 0):.1f}/s, grid {r.get('grid_per_s', 0):.1f}/s;"
        f" sshd side {r['sshd_cpu_pct']:.1f} % ({r['probes']:.0f} probes);"
        f" {r.get('ms_host_sample', float('nan')):.2f} ms a host-sample{visited}",
        flush=True,
    )


def med(rows: list[dict[str, float]], key: str) -> float:
    xs = [r[key] for r in rows if key in r]
    return statistics.median(xs) if xs else float("nan")


def spread(rows: list[dict[str, float]], key: str, fmt: str = ".2f") -> str:
    xs = [r[key] for r in rows if key in r]
    if not xs:
        return "-"
    return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"


def report(results: Results, args: argparse.Namespace, counts: list[int]) -> str:
    """Medians (min-max) as a Markdown table, one row per tree and host count; per-host
    figures and their ratio to the first count side by side."""
    lines = [
        "| tree | hosts | app CPU % of a core | app own process % | app CPU % per host "
        "| per host vs first | app RSS MiB | RSS MiB per host added | overview redraw ms (p90) "
        "| overview redraws/s | overview paint ms | paints/s | grid redraws/s "
        "| hosts' side % (sshd + probes) |"
        + (" app RSS MiB before the visit |" if args.visit else ""),
        "| --- " * (15 if args.visit else 14) + "|",
    ]
    first: dict[str, tuple[int, float, float]] = {}  # tree: hosts, CPU % per host, RSS
    for (label, n), rows in results.items():
        per_host, rss = med(rows, "cpu_pct") / n, med(rows, "rss_mib")
        n0, base, rss0 = first.setdefault(label, (n, per_host, rss))
        added = f"{(rss - rss0) / (n - n0):.2f}" if n != n0 else "-"
        lines.append(
            f"| {label} | {n} | {spread(rows, 'cpu_pct')} | {spread(rows, 'own_pct')} | "
            f"{per_host:.3f} | {per_host / base:.2f}x | {spread(rows, 'rss_mib', '.0f')} | "
            f"{added} | {med(rows, 'overview_ms'):.2f} "
            f"({med(rows, 'overview_p90_ms'):.2f}) | {med(rows, 'overview_per_s'):.1f} | "
            f"{med(rows, 'paint_ms'):.2f} | {med(rows, 'paint_per_s'):.1f} | "
            f"{med(rows, 'grid_per_s'):.1f} | {spread(rows, 'sshd_cpu_pct', '.1f')} |"
            + (f" {spread(rows, 'rss_before_keys_mib', '.0f')} |" if args.visit else "")
        )
    lines += ["", *split(results), ""]
    if args.windows > 1:
        lines += [*by_window(results, args), ""]
    lines.append(
        f"{','.join(map(str, counts))} hosts x 8 moving stand-in GPUs ({args.gpu}) over the "
        f"loopback sshd, --interval {args.interval:g}, 120x40 pty, medians (min-max) of "
        f"{args.repeats * args.windows} windows of {args.seconds:g} s"
        + (f" ({args.windows} one after the other in each start)" if args.windows > 1 else "")
        + f" after {args.warmup:g} s + {args.warmup_per_host:g} s a host, "
        f"{os.cpu_count()} CPU cores"
        + (", the hosts one job's members" if args.job else "")
        + (
            f"; before {'each window' if args.windows == 1 else 'the first window of each start'}"
            f" every host shown {args.visit} time(s) in turn (`]`, "
            f"{args.visit_pause:g} s apart; the app had shown the last host within a second "
            f"of {spread([r for rows in results.values() for r in rows], 'settle_s', '.0f')} s "
            "after the last key, the window 1 s later): its RSS is after the visit"
            + (
                ""
                if all(r.get("settled", 1) for rows in results.values() for r in rows)
                else "; in some windows NOT every host was shown in time (see the lines above)"
            )
            if args.visit
            else ""
        )
    )
    return "\n".join(lines)


def by_window(results: Results, args: argparse.Namespace) -> list[str]:
    """With several windows a start, each window on its own (medians over the repeats): one row
    per tree, host count and window, and when the window began after the app's start (the
    warm-up and a visit's keys and waits included)."""
    lines = [
        "| tree | hosts | window (s after start) | app CPU % of a core | ms CPU a host-sample "
        "| app RSS MiB |",
        "| --- " * 6 + "|",
    ]
    for (label, n), rows in results.items():
        for w in sorted({r["window"] for r in rows}):
            mine = [r for r in rows if r["window"] == w]
            start = med(mine, "window_start_s")
            lines.append(
                f"| {label} | {n} | {w:.0f} ({start:.0f}-{start + args.seconds:.0f}) | "
                f"{spread(mine, 'cpu_pct')} | {spread(mine, 'ms_host_sample', '.3f')} | "
                f"{spread(mine, 'rss_mib', '.0f')} |"
            )
    return lines


def split(results: Results) -> list[str]:
    """Where a host-sample's CPU goes (bench/app_timed.py's stages), medians over the windows:
    a Markdown table, one row per tree and host count."""
    cols = [*STAGES, "rest", *COLLECTIONS]
    lines = [
        "| tree | hosts | ms CPU a host-sample | "
        + " | ".join(f"{c} ms" for c in cols)
        + " | collections a second (young, middle, full) |",
        "| --- " * (len(cols) + 4) + "|",
    ]
    for (label, n), rows in results.items():
        per_s = ", ".join(f"{med(rows, f'{c}_per_s'):.2f}" for c in COLLECTIONS)
        lines.append(
            f"| {label} | {n} | {spread(rows, 'ms_host_sample', '.3f')} | "
            + " | ".join(f"{med(rows, f'ms_{c}'):.3f}" for c in cols)
            + f" | {per_s} |"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="8", help="host counts, comma-separated (e.g. 8,16,64)")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=20.0, help="one window (default 20)")
    ap.add_argument("--warmup", type=float, default=12.0, help="seconds before a window")
    ap.add_argument(
        "--warmup-per-host", type=float, default=0.3, help="more warm-up seconds per host"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--windows",
        type=int,
        default=1,
        help="windows one after the other in each start of the app (default 1): with "
        "several, each window's medians follow in a table of their own",
    )
    ap.add_argument("--gpu", choices=("smi", "nvml"), default="nvml")
    ap.add_argument(
        "--job",
        action="store_true",
        help="the hosts are one job's members: the overview's job row redraws every sample",
    )
    ap.add_argument(
        "--baseline-dir",
        type=Path,
        help="another tree measured the same way (`git archive REV tui dflash | tar -x`)",
    )
    ap.add_argument(
        "--visit",
        type=int,
        default=0,
        help="before the first window of each start, show every host this many times in turn "
        "(the `]` key): what a user who looked at every host leaves in memory",
    )
    ap.add_argument("--visit-pause", type=float, default=0.3, help="seconds between presses")
    ap.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="seconds at most to wait after the last press for the app to have shown every host",
    )
    ap.add_argument(
        "--profile", type=Path, help="py-spy the app for one window instead (.svg, or .txt raw)"
    )
    ap.add_argument(
        "--gil",
        action="store_true",
        help="with --profile: only the thread holding the GIL (py-spy --gil); without it a "
        "thread waiting for the GIL (the diagnosis') is counted as busy where it waits",
    )
    args = ap.parse_args()
    if args.windows < 1:
        ap.error("--windows: at least 1")
    why = sshd_unavailable()
    if why:
        print(f"hosts_cost: {why}", file=sys.stderr)
        return 2
    counts = [int(x) for x in args.hosts.split(",")]
    results = run(args, counts)
    if not args.profile:
        print(report(results, args, counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
