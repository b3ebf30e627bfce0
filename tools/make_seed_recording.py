"""Build the seed incident's recording (``dflash-tui replay --demo seed``) from its fixture.

The fixture (tests/fixtures/seed-incident/) is what one check of a real 8-GPU host returned six
minutes after a run was launched by hand with nohup: the nvidia-smi rows (GPUs 2, 3 and 7 at
100 % with 0 MiB, the rest idle), the watched log missing, no compute process, topology 0-4
target and 5-7 drafter. The recording plays those six minutes as a supervisor sampling every
30 s would have recorded them had the state held from the launch on (one observation repeated:
nothing else is known of those minutes), through the real recorder, so the replay shows how
the screen explains the incident: busy-no-memory on 2, 3, 7, idle elsewhere, log-missing with
how long, topology-mismatch.

Usage (repo root): python tools/make_seed_recording.py [--check]
(--check: build into a temporary folder and fail when the shipped recording differs)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests/fixtures/seed-incident/query-gpu_index,memory.used,utilization.gpu.csv"
OUT = ROOT / "tui/core/record/demo/seed"
SAMPLES, STEP = 13, 30.0  # six minutes, a sample every 30 s


def gpu_rows() -> list[tuple[int, int, int]]:
    """(index, MiB used, util %) from nvidia-smi's ``--format=csv,noheader`` (with units)."""
    rows = []
    for line in FIXTURE.read_text().splitlines():
        index, mem, util = (x.strip() for x in line.split(","))
        rows.append((int(index), int(mem.removesuffix(" MiB")), int(util.removesuffix(" %"))))
    return rows


def build(out: Path) -> None:
    from dflash_train.topology import Topology
    from dflash_tui.app import scenes
    from dflash_tui.core.base.config_record import RecordSettings
    from dflash_tui.core.base.config_types import HostConfig
    from dflash_tui.core.base.snapshot import Gpu
    from dflash_tui.core.diagnosis.tracker import Tracker
    from dflash_tui.core.record.recorder import Recorder

    host = HostConfig(
        name="gpu-box", container="pct:200", topology=Topology.parse("0-4:5-7"),
        logs=(scenes.SEED_LOG,),
    )  # fmt: skip
    base = scenes.seed_incident(samples=SAMPLES, step=STEP)
    gpus = tuple(
        replace(base[0].gpus[i], util=util, mem_used_mib=mem)
        if i < len(base[0].gpus)
        else Gpu(i, util=util, mem_used_mib=mem)
        for i, mem, util in gpu_rows()
    )
    recorder = Recorder(host, RecordSettings(segment_s=3600), "make_seed_recording")
    tracker = Tracker(host.topology)
    with tempfile.TemporaryDirectory() as tmp:
        import os

        os.environ["DFLASH_RECORD_DIR"] = tmp
        for snap in base:
            snap = replace(snap, gpus=gpus)
            recorder.add(snap, tracker.add(snap))
        recorder.close()
        made = sorted(Path(tmp).rglob("seg-*.jsonl.gz"))
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("seg-*.jsonl.gz"):
            old.unlink()
        for i, seg in enumerate(made):  # the writer's PID out of the name: reproducible
            shutil.copyfile(seg, out / f"seg-{round(base[0].time * 1000):015d}-{i}.jsonl.gz")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    if not args.check:
        build(OUT)
        print(f"wrote {', '.join(x.name for x in sorted(OUT.glob('seg-*')))} in {OUT}")
        return 0
    from dflash_tui.core.record.segments import read_segment

    def records(folder: Path) -> list[object]:
        out: list[object] = []
        for seg in sorted(folder.glob("seg-*")):
            # The writer's PID is in the meta record: everything else must be the same.
            out += [seg.name] + [{**r, "pid": 0} for r in read_segment(seg).records]
        return out

    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        same = records(Path(tmp)) == records(OUT)
    print("the shipped recording is up to date" if same else "the shipped recording differs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
