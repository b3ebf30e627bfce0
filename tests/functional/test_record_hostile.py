"""A recording is untrusted input: a malformed or over-deep record, bytes after a segment's
end, a record line that inflates past its cap are each a note, and the good samples around
them still read. ``status --replay`` and ``replay`` are run as the real command; replay's
memory stays bounded whatever a segment inflates to (peak RSS of the real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

from dflash_tui.app import scenes
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.record.recorder import Recorder
from dflash_tui.core.record.replay import RUN_MARK, load
from dflash_tui.core.record.segments import GZIP, RECORD_MAX, SegmentWriter, segment_files

ROOT = Path(__file__).resolve().parents[2]


def dflash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def record(run_root: Path, run_id: str, t0: float, samples: int = 6) -> Path:
    """A run dir under ``run_root`` and its record, as the real recorder writes it."""
    run = run_root / run_id
    run.mkdir(parents=True)
    host = HostConfig(run_root=str(run_root))
    snaps = [
        replace(s, time=t0 + 5 * k, run=replace(s.run, id=run_id, dir=str(run)))
        for k, s in enumerate(scenes.healthy_run(samples=samples))
        if s.run
    ]
    rec, tracker = Recorder(host, RecordSettings(segment_s=3600), "test"), Tracker(host.topology)
    for s in snaps:
        rec.add(s, tracker.add(s))
    rec.close()
    return run


def write_segment(where: Path, name: str, lines: list[bytes], trailing: bytes = b"") -> Path:
    path = where / name
    seg = SegmentWriter(path)
    for line in lines:
        seg.write(line)
    seg.close()
    if trailing:
        with open(path, "ab") as f:
            f.write(trailing)
    return path


def test_malformed_and_over_deep_records_are_notes_and_the_good_samples_read(
    tmp_path: Path,
) -> None:
    run = record(tmp_path, "r1", 1_800_000_000.0)
    good = load(run)
    t = good.end + 5
    bad = [
        json.dumps({"k": "s", "t": t, "snap": "not an object"}).encode() + b"\n",
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        b'{"k": "s", "t": 1, "snap": {"procs": 7, "time": ' + str(t + 1).encode() + b"}}\n",
        json.dumps({"k": "s", "snap": {"time": t + 2, "events": "x"}, "events": "abc"}).encode()
        + b"\n",
    ]
    write_segment(run / "record", "seg-999999999999999-1.jsonl.gz", bad, b"GARBAGE" * 10)
    res = dflash("status", "--replay", str(run), "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    notes = "\n".join(doc["replay"]["notes"])
    assert "record 1" in notes and "snap is str" in notes  # the string snap
    assert "record 2 is nested too deep" in notes
    assert "70 bytes after the end of its data ignored" in notes
    # The good samples are all there, and the readable odd ones after them.
    assert doc["replay"]["samples"] == len(good.samples) + 2
    text = dflash("status", "--replay", str(run))
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert "note: seg-999999999999999-1.jsonl.gz" in text.stderr


def test_an_inflating_record_line_is_skipped_with_its_size_and_memory_stays_bounded(
    tmp_path: Path,
) -> None:
    run = record(tmp_path, "r1", 1_800_000_000.0)
    # A 400 MiB line compressed into a few hundred KB: one record that would hold it whole.
    path = run / "record" / "seg-999999999999999-1.jsonl.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, GZIP)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"k":"s","snap":{"x":"'))
        block = b"a" * (1 << 20)
        for _ in range(400):
            f.write(z.compress(block))
        f.write(z.compress(b'"}}\n'))
        f.write(z.flush())
    assert path.stat().st_size < 1 << 20
    probe = (
        "import resource, subprocess, sys;"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
        "sys.stderr.write(r.stdout[-300:] + r.stderr[-3000:])"
    )
    cmd = [sys.executable, "-c", probe, sys.executable, "-m", "dflash_tui.cli.main"]
    res = subprocess.run(
        [*cmd, "status", "--replay", str(run), "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    rc, peak_kib = (int(x) for x in res.stdout.split())
    assert rc == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert peak_kib < 400 * 1024, f"replay peaked at {peak_kib / 1024:.0f} MiB"
    notes = load(run).notes  # the same reader, in this process: what the command noted
    assert any(f"is {(400 << 20) + 25:,} bytes, over the cap of {RECORD_MAX:,}" in n
               for n in notes), notes  # fmt: skip


def test_replay_of_a_run_root_plays_every_runs_record_in_order_with_marks(
    tmp_path: Path,
) -> None:
    first = record(tmp_path, "r1", 1_800_000_000.0)
    second = record(tmp_path, "r2", 1_800_000_100.0)
    rec = load(tmp_path)
    whole = [load(first), load(second)]
    assert len(rec.samples) == sum(len(r.samples) for r in whole)
    assert rec.start == whole[0].start and rec.end == whole[1].end
    marks = [(s.time, e["text"]) for s in rec.samples for e in s.events if e["kind"] == RUN_MARK]
    assert marks == [(whole[0].start, "run r1: its record begins"),
                     (whole[1].start, "run r2: its record begins")]  # fmt: skip
    assert [rec.samples[i].time for i in rec.jumps()][:1] == [whole[0].start]
    res = dflash("status", "--replay", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["run"]["id"] == "r2"


def test_replay_without_a_terminal_exits_2_pointing_to_status_replay(tmp_path: Path) -> None:
    run = record(tmp_path, "r1", 1_800_000_000.0)
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "replay", str(run)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd=ROOT,
        env={**os.environ, "TERM": "xterm-256color"},
    )  # fmt: skip
    assert res.returncode == 2
    assert res.stdout == b""  # nothing drawn into the pipe
    err = res.stderr.decode()
    assert "the app needs a terminal" in err and "dflash-tui status --replay" in err
    assert segment_files(run / "record")


async def test_the_replay_app_plays_a_run_root_with_its_run_marks(tmp_path: Path) -> None:
    from dflash_tui.app.replay import ReplayApp
    from dflash_tui.app.screens.timebar import TimeBar

    record(tmp_path, "r1", 1_800_000_000.0)
    record(tmp_path, "r2", 1_800_000_100.0)
    app = ReplayApp(load(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.screen.query_one(TimeBar)
        assert "sample 1/12" in bar.text and RUN_MARK in bar.text, bar.text
        await pilot.press("]")  # the next mark: where r2's record begins
        await pilot.pause()
        last = app.host_states[0].last
        assert last is not None and last.snapshot.run is not None
        assert last.snapshot.run.id == "r2" and "sample 7/12" in bar.text, bar.text
