"""What the flight recorder costs: bytes on disk and CPU time for a 10-minute run at 1 Hz on
8 GPUs (600 samples).

The samples are synthesised from recorded rows: the GPUs from the fake nvidia-smi's H200
scenario (tests/fixtures/scenarios/h200-load.json, one real H200 under load, as 8 GPUs with
readings that move every second), the process table from a real host's `ps` under load
(tests/fixtures/h200/ps_load.txt, 182 processes) plus a training job of 8 ranks and 16 data
workers (whose CPU and RSS change every sample), and 3 log lines a second (a step line with
loss and tok/s, and the pipeline's step event). Each sample is diagnosed outside the timing
(the supervisor diagnoses anyway); the timing covers what recording adds: the recorder's
timeline fold, encoding, compression and writing.

Prints one JSON line: bytes, MiB, the CPU seconds of recording (median of --repeat runs), and
that as a percentage of one core over the run's 600 s.
Usage (repo root): python bench/record_cost.py [--samples 600] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a plain checkout

from dflash_train.topology import Topology  # noqa: E402
from dflash_tui.core.base.config_record import RecordSettings  # noqa: E402
from dflash_tui.core.base.config_types import HostConfig  # noqa: E402
from dflash_tui.core.base.snapshot import Snapshot  # noqa: E402
from dflash_tui.core.diagnosis.tracker import Tracker  # noqa: E402
from dflash_tui.core.diagnosis.views import Diagnosis  # noqa: E402
from dflash_tui.core.record.recorder import Recorder  # noqa: E402

FIX = ROOT / "tests" / "fixtures"
T0 = 1_764_669_600.0


def ps_rows() -> list[dict[str, Any]]:
    rows = []
    for line in (FIX / "h200" / "ps_load.txt").read_text().splitlines()[1:]:
        f = line.split(None, 9)
        rows.append({"pid": int(f[0]), "ppid": int(f[1]), "pgid": int(f[2]), "sid": int(f[3]),
                     "state": f[4][0], "start_ticks": 100 + int(f[0]), "cpu_pct": float(f[6]),
                     "rss_kb": int(f[7]), "user": f[8], "cmd": f[9]})  # fmt: skip
    return rows


def gpu_row(k: int, i: int, rng: random.Random) -> dict[str, Any]:
    g = json.loads((FIX / "scenarios" / "h200-load.json").read_text())["gpus"][0]
    return {
        "index": i, "uuid": g["uuid"][:-2] + f"{i:02d}", "name": g["name"],
        "bus_id": g["pci.bus_id"][:-6] + f"{i:02X}.0", "util": rng.choice((97, 98, 99, 100)),
        "mem_util": int(g["utilization.memory"]) + rng.randint(-3, 3),
        "mem_used_mib": 61234 + rng.randint(-40, 40), "mem_total_mib": int(g["memory.total"]),
        "mem_reserved_mib": int(g["memory.reserved"]), "temp_c": 57 + rng.randint(-2, 3),
        "power_w": round(690.52 + rng.uniform(-30, 9), 2), "power_limit_w": 700.0,
        "sm_clock_mhz": 1410 + rng.choice((0, 0, 15, -15)), "mem_clock_mhz": 3201,
        "pstate": "P0", "throttle_reasons": 4, "ecc_uncorrected": 0,
    }  # fmt: skip


def samples(n: int) -> list[Snapshot]:
    rng = random.Random(7)
    base = ps_rows()
    run_dir = "/root/.local/state/dflash-tui/runs/20251202-100000-abcd"
    job = [{"pid": 5000, "ppid": 1, "pgid": 5000, "sid": 5000, "state": "S", "start_ticks": 9000,
            "rss_kb": 3000, "user": "root", "cmd": f"sh {run_dir}/run.sh {run_dir}"}]  # fmt: skip
    for r in range(8):
        job.append({"pid": 5001 + r, "ppid": 5000, "pgid": 5000, "sid": 5000, "state": "R",
                    "start_ticks": 9001, "user": "root",
                    "cmd": f"python3 -m dflash_train.train --rank {r} --target-gpus 0-4 "
                           "--drafter-gpus 5-7 --preset full"})  # fmt: skip
    for w in range(16):
        job.append({"pid": 5100 + w, "ppid": 5001 + w % 8, "pgid": 5000, "sid": 5000,
                    "state": "S", "start_ticks": 9050, "user": "root",
                    "cmd": "python3 -m dflash_train.train (data worker)"})  # fmt: skip
    out = []
    for k in range(n):
        t = T0 + k
        procs = [dict(p) for p in base] + [dict(p) for p in job]
        for p in procs[-24:]:
            p["cpu_pct"] = round(
                rng.uniform(90, 105) if p["state"] == "R" else rng.uniform(5, 30), 1
            )
            p["rss_kb"] = 40_000_000 + rng.randint(-50_000, 50_000)
        step = 1000 + 2 * k
        lines = [f"step={step + j} loss={2.5 - step / 4000:.4f} acc={0.4 + step / 20000:.4f} "
                 f"tok/s={2700 + rng.randint(-80, 80)}" for j in range(2)]  # fmt: skip
        lines.append(json.dumps({"event": "step", "step": step + 1, "t": t}))
        out.append(Snapshot.from_dict({
            "format": 1, "time": t, "host": "gpu-box", "probe_mode": "python", "clk_tck": 100,
            "boot_time": T0 - 86400, "interval": 1.0,
            "telemetry": {"source": "nvml", "error": None, "elapsed_ms": 12.0},
            "gpus": [gpu_row(k, i, rng) for i in range(8)],
            "gpu_procs": [{"pid": 5001 + i, "gpu_uuid": gpu_row(k, i, rng)["uuid"],
                           "used_mib": 60600, "name": "python3"} for i in range(8)],
            "procs": procs,
            "logs": [{"path": f"{run_dir}/output.log", "exists": True, "size": 10_000 + 200 * k,
                      "mtime": t, "lines": lines, "is_run_log": True,
                      "resume": f"{10_000 + 200 * k}:2049:1234:0:abcd"}],
            "run": {"id": "20251202-100000-abcd", "dir": run_dir, "command": "python3 -m ...",
                    "pid": 5000, "pgid": 5000, "start_ticks": 9000, "started_at": T0 - 60,
                    "log_path": f"{run_dir}/output.log", "events_path": f"{run_dir}/events.jsonl"},
            "last_step": {"time": t, "step": step + 1, "loss": 2.5 - step / 4000, "tok_s": 2710.0},
        }))  # fmt: skip
    return out


def one_run(snaps: list[Snapshot], diags: list[Diagnosis], host: HostConfig) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        moved = [replace(s, run=replace(s.run, dir=str(run))) if s.run else s for s in snaps]
        rec = Recorder(host, RecordSettings(), "bench")
        cpu = time.process_time()
        for s, d in zip(moved, diags, strict=True):
            rec.add(s, d)
        rec.close()
        cpu = time.process_time() - cpu
        size = sum(p.stat().st_size for p in (run / "record").iterdir())
    return size, cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=600)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    host = HostConfig(topology=Topology.parse("0-4:5-7"))
    snaps = samples(args.samples)
    tracker = Tracker(host.topology)
    diags = [tracker.add(s) for s in snaps]
    runs = [one_run(snaps, diags, host) for _ in range(args.repeat)]
    size = runs[0][0]
    cpu = statistics.median(c for _, c in runs)
    span = snaps[-1].time - snaps[0].time + 1
    raw = sum(len(json.dumps(s.__dict__, default=lambda o: getattr(o, "__dict__", str(o))))
              for s in snaps[:10]) / 10  # fmt: skip
    print(json.dumps({
        "samples": len(snaps), "gpus": 8, "procs_per_sample": len(snaps[0].procs),
        "raw_json_bytes_per_sample": round(raw), "bytes": size, "mib": round(size / 2**20, 3),
        "cpu_s_median": round(cpu, 3), "cpu_s_runs": [round(c, 3) for _, c in runs],
        "span_s": span, "core_pct": round(100 * cpu / span, 3),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
