#!/usr/bin/env python3
"""What one host's sample costs the app's process on the core path, and what each watched host
holds in memory, without SSH, the app's drawing or a real probe: N hosts' probe lines (the
scripted feed of bench/soak_feed.py at 1 Hz: 8 H200s whose readings move every sample, a
machine of --procs processes, --busy-procs of them moving, a run of 8 ranks with its logs and
findings that come and go) go through the code the app runs for every sample of every host,
a stage at a time:

The lines are what the probe's stream sends: with a tree whose probe has change lists
(``--delta``, tui/core/probe/procs.py ``RowDelta``), the process table only as it changed,
rebuilt by the feed's ``ProcTables`` within the parse stage; with an older tree, the whole
table every line. ``line_bytes`` is a host's mean line over the timed samples.

- split: the bytes as the SSH channel hands them (64 KiB reads) cut into lines and decoded
  (tui/core/link/transport.py read_lines' LineSplitter);
- parse: ``Snapshot.from_json`` (the feed's ``_parse``), the frozen sample records;
- tracker: ``Tracker.add`` (metrics, the history, the diagnosis' rules);
- timeline: ``Timeline.fold``;
- record: ``Recorder.add`` (the flight recorder: encoder, gzip, the file; to a temporary
  ``$DFLASH_RECORD_DIR``, as for a remote host);
- alerts: ``RunWatch`` and ``FindingWatch`` (the app's alert watchers).

The hosts take their samples in turn, a second of the feed's clock at a time, each host's
feed at its own place in its run (so the findings do not come and go together). After
--warmup samples a host (the tracker's window of 120 samples full, the recorder past its
first segment record), --samples more are timed: each stage's CPU (``time.thread_time``) is
summed, and the figure is ms of CPU per host-sample. The process's RSS after the run, for
several host counts, gives MiB per host added (the slope from the first count).

With --trees A,B (folders holding a checkout: ``tui`` and ``dflash``; e.g. a
``git archive REV tui dflash | tar -x`` copy) each tree runs in a fresh interpreter (imported
through a folder of links, as bench/draw_cost.py does), interleaved --repeats times:
A, B, then B, A, ... for each host count. Medians over the repeats.

    .venv/bin/python bench/host_sample_cost.py [--hosts 4,16] [--samples 60] [--warmup 130]
        [--procs 400] [--busy-procs 20] [--lines-per-s 5] [--one-name] [--trees DIR,DIR]
        [--repeats 3]
        [--profile out.prof]   # cProfile of one run in this interpreter instead
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

import soak_feed  # noqa: E402
from monitor_cost import in_turn, link_farm  # noqa: E402  the tree's packages as links, checked

STAGES = ("split", "parse", "tracker", "timeline", "record", "alerts")
READ = 1 << 16  # bytes an SSH channel read hands over at most (transport.CHUNK)
RUN_SAMPLES = 600  # a run's length in the scripted feed: a few runs end within a bench


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Host:
    """One watched host's core state, as the app keeps it (tui/app/host/state.py)."""

    def __init__(self, k: int, args: argparse.Namespace, work: Path) -> None:
        from dflash_tui.core.alerts.events import FindingWatch, RunWatch
        from dflash_tui.core.base.config_record import RecordSettings
        from dflash_tui.core.base.config_types import HostConfig
        from dflash_tui.core.base.lines import LineSplitter
        from dflash_tui.core.diagnosis.thresholds import thresholds_for
        from dflash_tui.core.diagnosis.timeline import Timeline
        from dflash_tui.core.diagnosis.tracker import Tracker
        from dflash_tui.core.record.recorder import Recorder

        self.name = f"h{k}"
        self.one_name = "stand-in" if args.one_name else None
        self.cfg = HostConfig(address=f"gpu-{k}.example", name=self.name)
        self.feed = argparse.Namespace(
            rate=1.0, step=1.0, run_root=str(work / self.name), run_samples=RUN_SAMPLES,
            gap_samples=30, procs=args.procs, busy_procs=args.busy_procs,
            lines_per_s=args.lines_per_s,
        )  # fmt: skip
        self.timeline_of_feed = soak_feed.Timeline(self.feed)
        self.base = soak_feed.machine_procs(args.procs)
        self.offset = (k * 97) % (RUN_SAMPLES + 30)  # its own place in its run
        self.t0 = 1_760_000_000.0
        self.split = LineSplitter(32 << 20)
        self.tracker = Tracker(self.cfg.topology, thresholds_for(self.cfg))
        self.timeline = Timeline()
        self.recorder = Recorder(self.cfg, RecordSettings(), "bench")
        self.runs, self.findings = RunWatch(), FindingWatch()
        self.success = self.cfg.restart.success_codes
        self.rows: Any = None
        self.tables: Any = None
        try:  # the stream's change lists, where the tree has them
            from dflash_tui.core.base.snapshot_delta import ProcTables
            from dflash_tui.core.probe.procs import RowDelta
        except ImportError:  # a tree from before them: whole tables
            return
        self.rows, self.tables = RowDelta(delta=True), ProcTables()

    def line(self, i: int) -> bytes:
        j = i + self.offset
        doc = soak_feed.sample(self.feed, self.timeline_of_feed, self.base, j, self.t0 + j, self.t0)
        doc["host"] = self.one_name or self.name
        if self.rows is None:
            return (json.dumps(doc, separators=(",", ":")) + "\n").encode()
        procs = doc.pop("procs")
        head = json.dumps(doc, separators=(",", ":"))
        return (head[:-1] + "," + self.rows.encode(procs) + "}\n").encode()

    def take(self, data: bytes, cpu: dict[str, float]) -> None:
        """One sample through every stage; each stage's thread CPU added to ``cpu``."""
        from dflash_tui.core.base.snapshot import Snapshot

        clock = time.thread_time
        t = clock()
        lines = []
        for at in range(0, len(data), READ):
            lines += [x.decode("utf-8", "replace") for x in self.split.feed(data[at : at + READ])
                      if isinstance(x, bytes)]  # fmt: skip
        t1 = clock()
        cpu["split"] += t1 - t
        for text in lines:
            snap = (
                Snapshot.from_json(text, self.tables) if self.tables else Snapshot.from_json(text)
            )
            t2 = clock()
            diag = self.tracker.add(snap)
            t3 = clock()
            events = self.timeline.fold(snap, diag)
            t4 = clock()
            self.recorder.add(snap, diag, events)
            t5 = clock()
            said = self.runs.observe(diag.run, diag.run_state, self.success)
            self.findings.observe(diag.findings)
            t6 = clock()
            cpu["parse"] += t2 - t1
            cpu["tracker"] += t3 - t2
            cpu["timeline"] += t4 - t3
            cpu["record"] += t5 - t4
            cpu["alerts"] += t6 - t5
            del said
            t1 = clock()


def one(args: argparse.Namespace, hosts: int) -> dict[str, Any]:
    """This interpreter's tree: ``hosts`` hosts, warm-up then the timed samples."""
    work = Path(tempfile.mkdtemp(prefix="host-sample-cost-"))
    os.environ["DFLASH_RECORD_DIR"] = str(work / "records")
    before = rss_mib()
    group = [Host(k, args, work) for k in range(hosts)]
    cpu = dict.fromkeys(STAGES, 0.0)
    for i in range(args.warmup):
        for h in group:
            h.take(h.line(i), cpu)
    cpu, sent = dict.fromkeys(STAGES, 0.0), 0
    for i in range(args.warmup, args.warmup + args.samples):
        for h in group:
            data = h.line(i)
            sent += len(data)
            h.take(data, cpu)
    n = hosts * args.samples
    out = {f"{s}_ms": 1000 * cpu[s] / n for s in STAGES}
    out["total_ms"] = sum(out.values())
    out["rss_mib"] = rss_mib()
    out["rss_start_mib"] = before
    out["line_bytes"] = sent / n
    for h in group:
        h.recorder.close()
        h.recorder.release()
    return out


def child_argv(args: argparse.Namespace, hosts: int) -> list[str]:
    argv = [sys.executable, __file__, "--one", "--hosts", str(hosts)]
    argv += ["--one-name"] if args.one_name else []
    for name in ("samples", "warmup", "procs", "busy_procs", "lines_per_s"):
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return argv


Runs = dict[tuple[str, int], list[dict[str, Any]]]


def interleaved(args: argparse.Namespace, trees: list[Path], counts: list[int]) -> Runs:
    work = Path(tempfile.mkdtemp(prefix="host-sample-farm-"))
    farms = [link_farm(t, work / str(i)) for i, t in enumerate(trees)]
    runs: Runs = {}
    for rep in range(args.repeats):
        for n in in_turn(counts, rep):
            for tree, farm in in_turn(list(zip(trees, farms, strict=True)), rep):
                env = dict(os.environ, PYTHONPATH=str(farm))
                out = subprocess.run(
                    child_argv(args, n), env=env, capture_output=True, text=True, check=True
                )
                r = json.loads(out.stdout.strip().splitlines()[-1])
                runs.setdefault((str(tree), n), []).append(r)
                stages = ", ".join(f"{s} {r[f'{s}_ms']:.2f}" for s in STAGES)
                print(f"  rep {rep + 1} {n} hosts {tree}: {r['total_ms']:.2f} ms a host-sample "
                      f"({stages}); RSS {r['rss_mib']:.0f} MiB", flush=True)  # fmt: skip
    return runs


def med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def report(runs: Runs, args: argparse.Namespace, counts: list[int]) -> str:
    head = "| tree | hosts | ms CPU per host-sample | " + " | ".join(STAGES)
    lines = [head + " | bytes a line | RSS MiB | MiB per host added |",
             "|" + " --- |" * (len(STAGES) + 6)]  # fmt: skip
    first: dict[str, tuple[int, float]] = {}
    for (tree, n), rows in runs.items():
        rss = med(rows, "rss_mib")
        n0, rss0 = first.setdefault(tree, (n, rss))
        added = f"{(rss - rss0) / (n - n0):.2f}" if n != n0 else "-"
        stages = " | ".join(f"{med(rows, f'{s}_ms'):.3f}" for s in STAGES)
        size = med(rows, "line_bytes")
        lines.append(f"| {tree} | {n} | {med(rows, 'total_ms'):.3f} | {stages} | {size:,.0f} "
                     f"| {rss:.0f} | {added} |")  # fmt: skip
    lines.append("")
    lines.append(
        f"{','.join(map(str, counts))} hosts x 8 GPUs, {args.procs} processes "
        f"({args.busy_procs} moving), {args.lines_per_s:g} lines/s per log, "
        f"{args.samples} samples a host timed after {args.warmup}, medians of {args.repeats}, "
        f"{os.cpu_count()} CPU cores"
    )
    return "\n".join(lines)


def profile(args: argparse.Namespace, hosts: int) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    one(args, hosts)
    prof.disable()
    prof.dump_stats(args.profile)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="4,16", help="host counts, comma-separated")
    ap.add_argument("--samples", type=int, default=60, help="timed samples a host")
    ap.add_argument("--warmup", type=int, default=130, help="samples a host before timing")
    ap.add_argument("--procs", type=int, default=400, help="the machine's processes")
    ap.add_argument("--busy-procs", type=int, default=20, help="of them, moving every sample")
    ap.add_argument("--lines-per-s", type=float, default=5.0, help="each of 3 logs'")
    ap.add_argument(
        "--one-name",
        action="store_true",
        help="every host's probe says one host name (bench/hosts_cost.py's stand-ins on one "
        "machine; containers of one image)",
    )
    ap.add_argument("--trees", help="comma-separated checkouts to compare (default: this one)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", type=Path, help="cProfile one run of the first count here")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child run
    args = ap.parse_args()
    counts = [int(x) for x in args.hosts.split(",")]
    if args.one:
        print(json.dumps(one(args, counts[0])))
        return
    if args.profile:
        profile(args, counts[0])
        return
    trees = [Path(t) for t in args.trees.split(",")] if args.trees else [ROOT]
    print(report(interleaved(args, trees, counts), args, counts))


if __name__ == "__main__":
    main()
