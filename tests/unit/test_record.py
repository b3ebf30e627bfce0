"""The flight recorder's format: samples read back equal to what was recorded (the process
table written as deltas), a segment cut mid-stream read up to its last whole record with a
note, thinning under the cap keeping every log line and event, ``[record]`` validated, times
for ``--at``."""

from __future__ import annotations

import gzip
import logging
import re
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest

from dflash_tui.app import scenes
from dflash_tui.core.base.config import ConfigError, load_file
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.machine import Checkpoint, Disk, GpuHealth, KernelLine, Machine, Worker
from dflash_tui.core.base.snapshot import Proc, Snapshot, StepPoints
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.record.recorder import Recorder, enforce_cap
from dflash_tui.core.record.replay import Cursor, RecordError, load, parse_time, status_at
from dflash_tui.core.record.segments import read_segment, segment_files, thin_level
from dflash_tui.core.record.thin import thin_segment

# Host health and worker heartbeats travel in samples too (they once failed to record: not
# JSON, and every live sample's diagnosis failed with them).
MACHINE = Machine(
    64_000_000, 3_000_000, 8_000_000, 7_000_000, 2,
    (Disk("run_root", "/runs", True, 10, 100, 5, 50), Disk("out_dir", "/out", error="gone")),
    Checkpoint("/out/step_100.pt", 100, 1_700_000_000.5, 4096), "kmsg", None,
    (KernelLine(1.5, "NVRM: Xid 79", 79, "0000:3b:00", 77, "python"),),
    (KernelLine(2.0, "Out of memory: Killed process 77", None, None, 77, "python"),),
    (GpuHealth(0, "GPU-0", False, None, ((1.5, 79),), 1, True, False, 2, 3),), "nvml",
)  # fmt: skip
WORKERS = (Worker("drafter", 1, 5, 0, 42, 3, "wait:queue", 1.0, 2.0), Worker("target", 0))


def _run(tmp_path: Path, samples: int = 40) -> tuple[HostConfig, list[Snapshot], Path]:
    run = tmp_path / "run"
    run.mkdir()
    snaps = [
        replace(s, run=replace(s.run, dir=str(run))) if s.run else s
        for s in scenes.healthy_run(samples=samples)
    ]
    # A process table that changes: a new PID every 5 samples, one gone every 7.
    out = []
    for k, s in enumerate(snaps):
        extra = tuple(
            Proc(9000 + j, 1, 9000 + j, 9000 + j, cmd=f"worker {j}") for j in range(k // 5)
        )
        kept = tuple(p for p in s.procs if not (k % 7 == 6 and p.pid == 5000))
        # The History tab's step points travel in samples too (a sample with them once failed
        # to record: they were not JSON).
        steps = StepPoints(f"{run}/events.jsonl", 100 * k, ((s.time, k, 2.5 - k / 100, 900.0),))
        health = {"machine": MACHINE if k % 2 else None, "workers": WORKERS if k % 4 else ()}
        out.append(replace(s, procs=kept + extra, steps=steps if k % 3 else None, **health))
    return HostConfig(run_root=str(tmp_path)), out, run


def _record(host: HostConfig, snaps: list[Snapshot], **kw: float) -> Recorder:
    rec = Recorder(host, RecordSettings(**kw), "test")  # type: ignore[arg-type]
    tracker = Tracker(host.topology)
    for s in snaps:
        rec.add(s, tracker.add(s))
    rec.close()
    return rec


def test_every_sample_reads_back_as_recorded(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path)
    _record(host, snaps, segment_s=60.0)
    files = segment_files(run / "record")
    assert len(files) == 4  # 40 samples 5 s apart, a segment a minute
    for f in files:  # each one a whole gzip file: zcat reads it
        assert gzip.decompress(f.read_bytes()).startswith(b'{"k":"meta"')
    rec = load(run)
    assert [s.snap for s in rec.samples] == snaps and rec.notes == []
    assert rec.meta["host"] == "local" and rec.meta["writer"] == "test"
    kinds = [e["kind"] for s in rec.samples for e in s.events]
    assert kinds[:2] == ["attached", "model_loaded"]


def test_a_segment_cut_mid_record_is_read_up_to_the_cut_with_a_note(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path)
    _record(host, snaps, segment_s=60.0)
    second = segment_files(run / "record")[1]
    whole = read_segment(second)
    data = second.read_bytes()
    second.write_bytes(data[: len(data) // 2])  # a crash, a full disk: cut mid-stream
    cut = read_segment(second)
    assert not cut.complete and "ends mid-stream" in (cut.note or "")
    assert 0 < len(cut.records) < len(whole.records)
    assert cut.records == whole.records[: len(cut.records)]  # whole records only, in order
    rec = load(run)
    lost = len(whole.records) - len(cut.records)
    assert len(rec.samples) == len(snaps) - lost
    assert [s.snap for s in rec.samples] == [s for s in snaps if s in {x.snap for x in rec.samples}]
    assert any(second.name in n and "last whole record" in n for n in rec.notes)
    # The samples after the cut (the next segments) are still there.
    assert rec.samples[-1].snap == snaps[-1]
    doc = status_at(rec, parse_time("+100s", rec))
    assert doc["replay"]["notes"] == rec.notes


def test_over_the_cap_old_segments_are_thinned_keeping_lines_and_events(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path, samples=80)
    _record(host, snaps, segment_s=100.0)  # 4 segments of 20 samples, no cap reached
    where = run / "record"
    full = load(run)
    size = sum(p.stat().st_size for p in segment_files(where))
    enforce_cap(where, int(size * 0.85), logging.getLogger("test"))
    files = segment_files(where)
    assert sum(p.stat().st_size for p in files) <= size * 0.85
    assert len(files) == 4 and thin_level(files[0]) == 4 and thin_level(files[-1]) == 1
    thin = load(run)
    assert len(thin.samples) < len(full.samples)
    assert any("thinned to 1 sample in 4" in n for n in thin.notes)

    def lines(r: object) -> list[str]:
        return [ln for s in r.samples for lg in s.snap.logs for ln in lg.lines]  # type: ignore[attr-defined]

    def events(r: object) -> list[str]:
        return [e["text"] for s in r.samples for e in s.events]  # type: ignore[attr-defined]

    assert lines(thin) == lines(full) and events(thin) == events(full)
    assert thin.samples[-1].snap == full.samples[-1].snap

    def steps(r: object) -> list[tuple[float, int | None, float | None, float | None]]:
        return [p for s in r.samples if s.snap.steps for p in s.snap.steps.points]  # type: ignore[attr-defined]

    assert steps(thin) == steps(full) and len(steps(full)) > 40  # the History's whole run


def test_recording_off_writes_nothing_and_a_failed_write_never_raises(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path, samples=3)
    _record(host, snaps, enabled=False)  # type: ignore[arg-type]
    assert not (run / "record").exists()
    (run / "record").write_text("not a directory")
    rec = _record(host, snaps)
    assert rec.samples == 0 and rec.failed == {run / "record"}


def test_the_record_table_is_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[record]\nenabled = false\nmax_mib = 5\nsegment_s = 30\n")
    assert load_file(cfg).record == RecordSettings(False, 5.0, 30.0)
    for bad, needle in (
        ("maxmib = 5", "unknown key 'record.maxmib' (did you mean 'record.max_mib'?)"),
        ("max_mib = 0", "record.max_mib must be a number >= 1"),
        ("max_mib = inf", "record.max_mib must be a number >= 1"),  # overflowed the byte cap
        ("enabled = 1", "record.enabled must be true or false"),
        ("segment_s = 'x'", "record.segment_s must be a number"),
    ):
        cfg.write_text(f"[record]\n{bad}\n")
        with pytest.raises(ConfigError, match=re.escape(needle)):
            load_file(cfg)


def test_times_for_at(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path, samples=10)
    _record(host, snaps)
    rec = load(run)
    t0, t1 = rec.start, rec.end
    assert parse_time("+90s", rec) == t0 + 90 and parse_time("+1m30s", rec) == t0 + 90
    assert parse_time("-10s", rec) == t1 - 10 and parse_time("+1h", rec) == t0 + 3600
    assert parse_time(str(t0 + 5), rec) == t0 + 5
    assert parse_time("2025-12-02T10:00:05Z", rec) == t0 + 5
    assert parse_time("2025-12-02T10:00:05", rec) == t0 + 5  # no zone: UTC
    with pytest.raises(RecordError, match="cannot read the time 'soon'"):
        parse_time("soon", rec)
    with pytest.raises(RecordError, match="no recording in"):
        load(tmp_path / "nothing-here")


def test_a_step_back_is_the_same_state_as_folding_from_the_start(tmp_path: Path) -> None:
    host, snaps, run = _run(tmp_path, samples=80)
    _record(host, snaps, segment_s=100.0)
    rec = load(run)
    moving = Cursor(rec)
    moving.seek(79)
    for target in (70, 64, 63, 5, 40, 33):  # back past checkpoints, and forward again
        moving.seek(target)
        fresh = Cursor(rec)
        fresh.seek(target)
        assert moving.document() == fresh.document()
        assert moving.lines == fresh.lines
        assert list(moving.timeline.events) == list(fresh.timeline.events)
        assert moving.new_events == fresh.new_events
        assert list(moving.tracker.metrics) == list(fresh.tracker.metrics)


def test_one_writer_per_record_dir(tmp_path: Path) -> None:
    # Two viewers of one run, each recording the lines new to it, wrote every line twice.
    import subprocess

    host, snaps, run = _run(tmp_path, samples=6)
    where = run / "record"
    where.mkdir()
    other = subprocess.Popen(["sleep", "30"])
    try:
        ticks = Path(f"/proc/{other.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        (where / ".writer").write_text(f"{other.pid} {ticks}\n")
        rec = _record(host, snaps)
        assert rec.samples == 0 and segment_files(where) == []  # the live writer's dir
    finally:
        other.kill()
        other.wait()
    rec = _record(host, snaps)  # that writer is gone: this one takes its place
    assert rec.samples == 6 and len(load(run).samples) == 6
    rec.release()
    assert not (where / ".writer").exists()


def test_thinning_holds_one_record_not_the_segment(tmp_path: Path) -> None:
    """A segment is thinned as a stream: what thinning allocates at its peak stays a small
    part of the segment's decompressed size, which a whole-segment read would exceed."""
    host, snaps, run = _run(tmp_path, samples=480)
    _record(host, snaps, segment_s=1e6)  # one segment
    (path,) = segment_files(run / "record")
    with gzip.open(path) as f:
        raw = len(f.read())
    tracemalloc.start()
    try:
        new, _ = thin_segment(path, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < raw / 4, f"thinning peaked at {peak:,} bytes for {raw:,} decompressed"
    kept = [r for r in read_segment(new).records if r.get("k") == "s"]
    # 1 in 4, and the last sample
    assert len(kept) == 480 // 4 + 1 and read_segment(new).records[0]["thin"] == 4
