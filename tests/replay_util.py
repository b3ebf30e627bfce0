"""A recording of a run that crashes, made by the real recorder from fixed samples: the
healthy scene's run logging steps for a minute, then SIGKILLed (exit 137) after its last
lines, then two samples of the ended run."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

from tmux_util import Tmux

from dflash_tui.app import scenes
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.record.recorder import Recorder

LAST_LINES = (
    "step=299 loss=0.713 acc=0.499 tok/s=2763",
    "RuntimeError: NCCL watchdog timeout on rank 3",
)


def crash_samples(run: Path) -> list[Snapshot]:
    alive = scenes.healthy_run(samples=20)  # steps 100..299, 5 s apart
    alive = [replace(s, run=replace(s.run, dir=str(run))) for s in alive if s.run]
    last = alive[-1]
    assert last.run is not None
    end = last.time + 5
    log = replace(last.logs[0], lines=LAST_LINES, size=(last.logs[0].size or 0) + 90)
    dead_run = replace(last.run, exit_code=137, ended_at=end - 1)
    job = {last.run.pgid, 4243, 4250}
    dead = replace(
        last,
        run=dead_run,
        procs=tuple(p for p in last.procs if p.pid not in job),
        gpu_procs=(),
        gpus=tuple(replace(g, util=0, mem_used_mib=0) for g in last.gpus),
    )
    # The last lines arrive with the sample that sees the crash; nothing after.
    after = [replace(dead, time=end + 5 * k, logs=(replace(log, lines=()),)) for k in (1, 2)]
    return [*alive[:-1], replace(alive[-1], logs=(replace(alive[-1].logs[0]),)),
            replace(dead, time=end, logs=(log,)), *after]  # fmt: skip


def make_crash_recording(run: Path) -> list[Snapshot]:
    run.mkdir(parents=True, exist_ok=True)
    host = HostConfig(run_root=str(run.parent))
    snaps = crash_samples(run)
    rec, tracker = Recorder(host, RecordSettings(segment_s=30), "test"), Tracker(host.topology)
    for s in snaps:
        rec.add(s, tracker.add(s))
    rec.close()
    return snaps


def replay_in_tmux(tmux: Tmux, tmp_path: Path) -> Path:
    """``dflash-tui replay`` of a fresh crash recording in a new 120x40 session of ``tmux``
    (tests/tmux_util.py), at its first sample; the recording's run directory."""
    run = tmp_path / "runs" / "20251202-095500-1a2b"
    make_crash_recording(run)
    app = shlex.join([sys.executable, "-m", "dflash_tui.cli.main", "replay", str(run)])
    root = shlex.quote(str(Path(__file__).resolve().parents[1]))
    tmux("new-session", "-d", "-x", "120", "-y", "40", f"sleep 1; cd {root}; exec {app}")
    tmux.wait("sample 1/23")
    return run
