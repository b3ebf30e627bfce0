#!/usr/bin/env python3
"""A scripted live feed for bench/soak.py: stands where the probe runs and prints its JSON lines.

The app (or ``supervise``) starts its probe as ``$DFLASH_TUI_PYTHON - ARGS`` with the probe's
source on stdin; bench/soak.py points DFLASH_TUI_PYTHON at a two-line script that runs this
instead. It drains stdin, then prints one sample every 1/--rate seconds (on a schedule: a reader
slower than that makes the pipe block it, and samples come as fast as they are taken), for ever.
Each sample is --step seconds of the feed's own clock (default 1: 20 samples a second play a
run watched at 1 Hz twenty times as fast, so time-kept state, the history, segments of the
recording, ages, sees the hours a 1 Hz viewer would):

- 8 H200s whose readings move every sample, a machine of --procs processes (--busy-procs of
  them with CPU and memory that move every sample);
- runs that start and end: a run of --run-samples (8 ranks on the 8 GPUs, a pgid of their own,
  a run directory under --run-root, made as a launcher would), --gap-samples with no run, the
  next; every other run ends with exit 1 (a crash), the others with 0;
- findings that come and go within each run, each for 60 samples: a GPU idle, a foreign
  process on a GPU, a GPU near its memory, a loss that is nan;
- 3 logs at --lines-per-s each (the run log with step lines, two workers' logs), a step event
  a sample for the History tab;
- the host's health as the probe reads it (the ``machine`` key): memory that moves, the OOM
  counter, the disks of the run root, and while a run runs its output folder (filling) and
  compile cache, the kernel log, and NVML's health of each GPU.

It keeps its place in --state (samples so far, and the first one's time): a probe started again
by the feed (after a stall, or any reconnect) continues the same timeline. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

GPUS = 8
MIB_TOTAL = 143771
BASE_PID = 2000  # the machine's processes: pids BASE_PID.. (never signalled: nothing acts)
RUN_PGID = 50000  # run r's processes: RUN_PGID + 100 * r (leader), + 1 .. + 8 the ranks
FOREIGN_PID = 7777


FINDING_SAMPLES = 60  # how long a finding stays


class Timeline:
    """Where sample ``i`` falls: which run, how far into it, and whether it runs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.run_len = max(1, args.run_samples)
        self.cycle = self.run_len + max(1, args.gap_samples)

    def at(self, i: int) -> tuple[int, int, bool]:
        run, pos = divmod(i, self.cycle)
        return run, pos, pos < self.run_len

    @staticmethod
    def window(pos: int, start: int) -> bool:
        """Within FINDING_SAMPLES from sample ``start`` of a run (a finding's time to show)."""
        return start <= pos < start + FINDING_SAMPLES


def machine_procs(n: int) -> list[dict[str, Any]]:
    rows = [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "state": "S", "start_ticks": 1,
             "rss_kb": 9000, "cpu_pct": 0.0, "user": "root", "cmd": "/sbin/init"}]  # fmt: skip
    for k in range(n - 1):
        pid = BASE_PID + k
        rows.append({"pid": pid, "ppid": 1, "pgid": pid, "sid": pid, "state": "S",
                     "start_ticks": 100 + k, "rss_kb": 4000 + 17 * k, "cpu_pct": 0.0,
                     "user": "root", "cmd": f"/usr/sbin/daemon-{k % 23} --worker {k}"})  # fmt: skip
    return rows


def busy(base: list[dict[str, Any]], n: int, i: int) -> list[dict[str, Any]]:
    """The machine's processes, the first ``n`` of them with CPU and memory that move (rows a
    recording must write again every sample, as on a machine with busy services)."""
    moved = [row | {"cpu_pct": float((i * 7 + k) % 100), "rss_kb": row["rss_kb"] + i % 97}
             for k, row in enumerate(base[:n])]  # fmt: skip
    return moved + base[n:]


def run_record(args: argparse.Namespace, r: int, start: float, end: float | None) -> dict:
    rid = f"soak-{r:05d}"
    run_dir = Path(args.run_root) / rid
    run_dir.mkdir(parents=True, exist_ok=True)  # as the launcher makes it
    pgid = RUN_PGID + 100 * r
    rec: dict[str, Any] = {"id": rid, "dir": str(run_dir), "command": "python train.py",
                           "pid": pgid, "pgid": pgid, "start_ticks": 10_000 + r,
                           "started_at": start, "log_path": str(run_dir / "output.log"),
                           "events_path": str(run_dir / "events.jsonl")}  # fmt: skip
    if end is not None:
        rec |= {"exit_code": r % 2, "ended_at": end}
    return rec


def run_procs(r: int, i: int) -> list[dict[str, Any]]:
    pgid = RUN_PGID + 100 * r
    rows = [{"pid": pgid, "ppid": 1, "pgid": pgid, "sid": pgid, "state": "S",
             "start_ticks": 10_000 + r, "rss_kb": 400_000, "cpu_pct": 1.0, "user": "root",
             "cmd": "torchrun --nproc-per-node 8 train.py"}]  # fmt: skip
    for g in range(GPUS):
        rows.append({"pid": pgid + 1 + g, "ppid": pgid, "pgid": pgid, "sid": pgid,
                     "state": "R", "start_ticks": 10_001 + r, "rss_kb": 9_000_000 + 1000 * (i % 50),
                     "cpu_pct": 95.0 + (i + g) % 5, "user": "root",
                     "cmd": f"python train.py --local-rank {g}"})  # fmt: skip
    return rows


def gpus(i: int, running: bool, idle: bool, full: bool) -> list[dict[str, Any]]:
    out = []
    for g in range(GPUS):
        wave = (i + 3 * g) % 10
        busy = running and not (idle and g == 3)
        used = 60_000 + 1000 * wave if busy else 600
        if full and g == 6:
            used = MIB_TOTAL - 200
        out.append({"index": g, "uuid": f"GPU-soak-{g}", "name": "NVIDIA H200",
                    "bus_id": f"00000000:{g + 0x18:02X}:00.0", "util": 90 + wave if busy else 0,
                    "mem_util": 40 + wave if busy else 0, "mem_used_mib": used,
                    "mem_total_mib": MIB_TOTAL, "temp_c": 55 + wave // 2 if busy else 35,
                    "power_w": 300.0 + 37 * wave if busy else 80.0, "power_limit_w": 700.0,
                    "sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "pstate": "P0"})  # fmt: skip
    return out


def logs(args: argparse.Namespace, i: int, r: int, running: bool, nan: bool) -> list[dict]:
    """The run log and two workers' logs, each --lines-per-s lines a second."""
    per = args.lines_per_s / args.rate
    k = math.floor((i + 1) * per) - math.floor(i * per)  # this sample's share, exactly
    run_dir = Path(args.run_root) / f"soak-{r:05d}"
    out = []
    if running:
        loss = "nan" if nan else f"{2.5 - (i % 1000) / 1000:.4f}"
        lines = [f"step={i * k + j} loss={loss} acc=0.41 tok/s=2812.5" for j in range(k)]
        out.append({"path": str(run_dir / "output.log"), "exists": True, "size": 100 * i,
                    "lines": lines, "is_run_log": True})  # fmt: skip
    for w in (1, 2):
        lines = [f"[rank{w}] INFO shard {i * k + j} read in {(i + j) % 40} ms" for j in range(k)]
        out.append({"path": f"/var/log/soak/worker-{w}.log", "exists": True,
                    "size": 80 * i, "lines": lines})  # fmt: skip
    return out


def _disk(what: str, path: str, free_gib: float) -> dict[str, Any]:
    return {"what": what, "path": path, "exists": True, "total_bytes": 7 << 40,
            "free_bytes": int(free_gib * (1 << 30)), "total_inodes": 460_000_000,
            "free_inodes": 450_000_000}  # fmt: skip


def machine(args: argparse.Namespace, r: int, pos: int, running: bool, i: int) -> dict[str, Any]:
    """The probe's ``machine`` key (tui/core/probe/machine.py, nvhealth.py): what a host
    sends every sample besides its GPUs and processes."""
    run_dir = str(Path(args.run_root) / f"soak-{r:05d}")
    disks = [_disk("run_root", args.run_root, 5000.0)]
    if running:  # a run's output folder fills as it checkpoints
        disks += [_disk("out_dir", f"{run_dir}/out", 4000.0 - pos * 0.05),
                  _disk("compile_cache", "/root/.cache/dflash/compile", 5000.0)]  # fmt: skip
    health = [{"index": g, "uuid": f"GPU-soak-{g}", "lost": False, "error": None, "xids": [],
               "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
               "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False,
                                 "failure": False},
               "pcie_replay": 0} for g in range(GPUS)]  # fmt: skip
    return {
        "mem_total_kb": 2_113_464_000, "mem_available_kb": 1_900_000_000 - 1000 * (i % 500),
        "swap_total_kb": 0, "swap_free_kb": 0, "oom_kill": 0, "disks": disks,
        "checkpoint": None, "kernel_log": {"source": "kmsg", "xids": [], "ooms": []},
        "nvml": {"gpus": health, "xid_watch": "nvml"},
    }  # fmt: skip


def sample(args: argparse.Namespace, tl: Timeline, base: list[dict], i: int, t: float, t0: float):
    r, pos, running = tl.at(i)
    start = t0 + r * tl.cycle * args.step
    end = None if running else start + tl.run_len * args.step
    procs, gprocs = busy(base, args.busy_procs, i), []
    if running:
        procs += run_procs(r, i)
        pgid = RUN_PGID + 100 * r
        gprocs = [{"pid": pgid + 1 + g, "gpu_uuid": f"GPU-soak-{g}", "used_mib": 59_000,
                   "name": "python"} for g in range(GPUS)]  # fmt: skip
        if tl.window(pos, 400):  # someone else's process on GPU 5
            procs.append({"pid": FOREIGN_PID, "ppid": 1, "pgid": FOREIGN_PID, "sid": FOREIGN_PID,
                          "state": "S", "start_ticks": 5, "rss_kb": 100_000, "cpu_pct": 3.0,
                          "user": "alice", "cmd": "python notebook.py"})  # fmt: skip
            gprocs.append({"pid": FOREIGN_PID, "gpu_uuid": "GPU-soak-5", "used_mib": 2000})
    nan = running and tl.window(pos, 800)
    step = {"time": t, "step": i, "loss": "NaN" if nan else 2.0, "acc": 0.4, "tok_s": 2812.5}
    doc = {
        "time": t, "host": "soak-host", "interval": args.step, "clk_tck": 100,
        "boot_time": t0 - 1000.0, "probe_mode": "python",
        "telemetry": {"source": "nvml", "elapsed_ms": 3.0},
        "gpus": gpus(i, running, running and tl.window(pos, 200), running and tl.window(pos, 600)),
        "gpu_procs": gprocs, "procs": procs,
        "logs": logs(args, i, r, running, nan),
        "run": run_record(args, r, start, end),
        "machine": machine(args, r, pos, running, i),
    }  # fmt: skip
    if running:
        events = str(Path(args.run_root) / f"soak-{r:05d}" / "events.jsonl")
        doc["last_step"] = step
        doc["steps"] = {"path": events, "from": 120 * pos, "points": [[t, i, 2.0, 2812.5]]}
    return doc


def load_state(path: Path) -> tuple[int, float]:
    try:
        i, t0 = path.read_text().split()
        return int(i), float(t0)
    except (OSError, ValueError):
        return 0, time.time()


def save_state(path: Path, i: int, t0: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{i} {t0}\n")
    tmp.replace(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=20.0, help="samples a second")
    ap.add_argument("--run-root", required=True)
    ap.add_argument("--state", type=Path, required=True, help="samples so far (kept here)")
    ap.add_argument("--step", type=float, default=1.0, help="feed seconds a sample")
    ap.add_argument("--run-samples", type=int, default=3000, help="a run's length")
    ap.add_argument("--gap-samples", type=int, default=100, help="between two runs")
    ap.add_argument("--procs", type=int, default=100, help="the machine's processes")
    ap.add_argument("--busy-procs", type=int, default=20, help="of them, moving every sample")
    ap.add_argument("--lines-per-s", type=float, default=50.0, help="each log's")
    args, _probe_args = ap.parse_known_args()
    sys.stdin.buffer.read()  # the probe's source: not needed, drained so its writer goes on
    tl, base = Timeline(args), machine_procs(args.procs)
    i, t0 = load_state(args.state)
    due = time.monotonic()
    out = sys.stdout
    while True:
        due += 1 / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            due = time.monotonic()  # behind (a slow reader): no burst to catch up
        t = t0 + i * args.step  # the feed's own clock
        out.write(json.dumps(sample(args, tl, base, i, t, t0), separators=(",", ":")) + "\n")
        out.flush()
        i += 1
        if i % round(args.rate) == 0:
            save_state(args.state, i, t0)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
