"""What thinning one recorded segment costs in memory: the peak RSS of a fresh process that
thins it (``VmHWM``), above that process's RSS before the thinning (after its imports).

The segment is one the recorder writes: --samples samples of bench/record_cost.py's 8-GPU
host under load (182 processes plus a training job, 3 log lines a second) in one segment,
as a run's recording holds at each rotation (``segment_s`` = 300 at 1 Hz). The thinning runs
in a child process so that its peak (``ru_maxrss``) is the thinning's alone; memory a
process once grew to is rarely given back to the system, so a peak here stays in the app.

Prints one JSON line: the segment's bytes on disk and decompressed, the child's RSS before
and its peak during the thinning (MiB), and the thinned segment's bytes.
Usage (repo root): python bench/thin_rss.py [--samples 300]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a plain checkout
sys.path.insert(0, str(ROOT / "bench"))

from record_cost import samples  # noqa: E402

from dflash_train.topology import Topology  # noqa: E402
from dflash_tui.core.base.config_record import RecordSettings  # noqa: E402
from dflash_tui.core.base.config_types import HostConfig  # noqa: E402
from dflash_tui.core.record.recorder import Recorder  # noqa: E402
from dflash_tui.core.record.thin import thin_segment  # noqa: E402


def write_segment(where: Path, n: int) -> Path:
    host = HostConfig(topology=Topology.parse("0-4:5-7"))
    run = where / "run"
    run.mkdir()
    rec = Recorder(host, RecordSettings(max_mib=1 << 20, segment_s=1e9), "bench")
    for s in samples(n):
        rec.add(replace(s, run=replace(s.run, dir=str(run))) if s.run else s, None)
    rec.close()
    (seg,) = (run / "record").glob("seg-*")
    return seg


def hwm_mib() -> float:
    """This process's peak RSS. ``VmHWM``, not ``ru_maxrss``: on Linux a child's ru_maxrss
    starts at its parent's peak (it survives exec), which would hide a smaller peak here."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM in /proc/self/status (Linux only)")


def child(path: Path) -> None:
    """Runs in the child: thin ``path`` and say RSS before and the peak after (MiB)."""
    before = hwm_mib()
    _, size = thin_segment(path, 4)
    peak = hwm_mib()
    print(json.dumps({"rss_before_mib": round(before, 1), "rss_peak_mib": round(peak, 1),
                      "thinned_bytes": size}))  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        seg = write_segment(Path(tmp), args.samples)
        size = seg.stat().st_size
        with gzip.open(seg) as f:
            raw = sum(len(b) for b in iter(lambda: f.read(1 << 20), b""))
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(seg)], capture_output=True, text=True
        )
        if out.returncode:
            raise SystemExit(out.stderr)
        got = json.loads(out.stdout)
    got["delta_mib"] = round(got["rss_peak_mib"] - got["rss_before_mib"], 1)
    print(json.dumps({"samples": args.samples, "segment_bytes": size, "decompressed_bytes": raw,
                      **got}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
