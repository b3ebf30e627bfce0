"""What the History tab costs the probe and the app.

1. The probe's ``steps`` key (tui/core/probe/files.py StepReader): catching up on a long event
   stream (the pipeline's compact step lines), then one sample with one new step.
2. The app's plots: one redraw of the five History plots (textual-plotext / plotext build) with
   full series, and decimated as the tab does (one point a column of a 58-column plot).

Prints one JSON line. Usage (repo root): python bench/history_steps.py [--steps 700000]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from textual_plotext.plot import Plot

from dflash_tui.core.diagnosis.history import CAPACITY, decimate
from dflash_tui.core.probe.files import StepReader


def probe_catch_up(steps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "events.jsonl"
        with path.open("w") as f:
            for s in range(steps):
                rec = {"event": "step", "time": 1.7e9 + s, "step": s, "loss": 2.0, "acc": 0.4,
                       "tok_s": 2800.0, "lr": 6e-4, "tq": 2, "dq": 1}  # fmt: skip
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        run, reader, errors = {"events_path": str(path)}, StepReader(), []  # type: ignore[var-annotated]
        times, sent = [], 0
        while True:
            t = time.perf_counter()
            got = reader.read(run, errors)
            times.append(time.perf_counter() - t)
            if not got["points"]:
                break
            sent += len(json.dumps(got))
        with path.open("a") as f:
            f.write('{"event":"step","time":1,"step":1,"loss":2.0,"tok_s":1.0}\n')
        t = time.perf_counter()
        reader.read(run, errors)
        steady = time.perf_counter() - t
        return {
            "stream_mib": round(path.stat().st_size / 2**20, 1),
            "catch_up_samples": len(times) - 1,
            "catch_up_ms_median": round(statistics.median(times[:-1]) * 1000, 1),
            "catch_up_ms_max": round(max(times[:-1]) * 1000, 1),
            "catch_up_kib_per_sample": round(sent / (len(times) - 1) / 1024, 1),
            "steady_ms": round(steady * 1000, 2),
        }


def redraw_ms(points: int, gpus: int = 8) -> float:
    xs = [i / 10 for i in range(CAPACITY)]
    series = [[(x, 50 + 40 * math.sin(x / 7 + g)) for x in xs] for g in range(gpus)]
    t = time.perf_counter()
    for _ in range(5):  # the History tab's five plots
        plt = Plot()
        plt.plotsize(58, 16)
        for g, ser in enumerate(series):
            pts = decimate(ser, points)
            plt.plot([p[0] for p in pts], [p[1] for p in pts], label=f"GPU {g}")
        plt.build()
    return round((time.perf_counter() - t) * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=700_000)
    args = ap.parse_args()
    out = probe_catch_up(args.steps)
    out["redraw_ms_full_2048"] = redraw_ms(CAPACITY)
    out["redraw_ms_decimated_58"] = redraw_ms(58)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
