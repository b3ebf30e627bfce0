"""The flight recorder under ``dflash-tui supervise`` (real processes, a temporary run root):
a job logging ``step=N loss=... tok/s=...`` is supervised with recording on, then SIGKILLed;
the recording holds every sample the supervisor took, and ``status --replay ... --at`` gives
the run running with its step before the kill and killed (exit 137) after it."""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervise_util import cleanup, cli, record, run_dirs, wait_for

from dflash_tui.core.record.replay import load
from dflash_tui.core.record.segments import segment_files

pytestmark = pytest.mark.slow
INTERVAL = 0.5
JOB = (
    'i=0; while :; do i=$((i+1)); echo "step=$i loss=$(( 900 - i )).5 tok/s=1234"; sleep 0.5; done'
)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def _members(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and int(d.name) != pgid:
            out.append(int(d.name))
    return out


def _kill_job(run: Path) -> float:
    """SIGKILL the job (every process of its group but the wrapper, which records the exit)."""
    _leader, pgid, _ = (int(x) for x in (run / "pid").read_text().split())
    members = _members(pgid)
    assert members, "the job has no process besides its wrapper"
    t = time.time()
    for pid in members:
        os.kill(pid, signal.SIGKILL)
    return t


def test_a_supervised_run_killed_is_recorded_sample_by_sample_and_replays(
    root: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[record]\nsegment_s = 8\n")
    common = ("--config", str(cfg), "--run-root", str(root), "--interval", str(INTERVAL))
    res = cli("supervise", *common, "--detach")
    assert res.returncode == 0, res.stderr
    res = cli("launch", "--json", "--run-root", str(root), "--command", JOB, "--start-window", "1")
    assert json.loads(res.stdout)["ok"], res.stdout
    run = run_dirs(root)[0]
    wait_for(lambda: (run / "record").is_dir(), 30, "the run's record directory")
    time.sleep(22)  # ~44 samples of the job alive, three segments
    t_kill = _kill_job(run)
    wait_for(lambda: (run / "exit").exists(), 10, "the wrapper records the exit")
    assert (run / "exit").read_text().split()[0] == "137"
    time.sleep(4)  # samples of the run after its end
    res = cli("supervise", "--stop", "--run-root", str(root))
    assert res.returncode == 0, res.stdout + res.stderr
    sup = record(root)
    assert sup["stopped_at"] is not None

    # Every sample the supervisor took is in the recording: the run's, plus the run root's
    # (samples before the launch, in <run_root>/.record/).
    rec = load(run)
    before = load(root / ".record") if segment_files(root / ".record") else None
    recorded = len(rec.samples) + (len(before.samples) if before else 0)
    assert sup["samples"] == sup["recorded"] == recorded, (sup["samples"], recorded)
    assert recorded >= 40 and rec.notes == []
    times = [s.time for s in rec.samples]
    assert all(0 < b - a < 4 * INTERVAL for a, b in itertools.pairwise(times))
    assert len(segment_files(run / "record")) >= 3  # rotated every 8 s

    # 10 s before the kill: running, with the step the log had reached then.
    def status_at(at: str) -> dict:
        res = cli("status", "--replay", str(run), "--at", at, "--json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    doc = status_at(str(t_kill - 10))
    assert doc["run"]["state"] == "running" and doc["run"]["exit_code"] is None
    at = rec.samples[rec.index_at(t_kill - 10)]
    steps = [
        int(line.split()[0].split("=")[1])
        for s in rec.samples
        if s.time <= at.time
        for lg in s.snap.logs
        for line in lg.lines
        if line.startswith("step=")
    ]
    assert doc["progress"]["step"] == max(steps) >= 5
    assert doc["progress"]["tok_s"] == 1234
    # After it: killed, exit 137 (an ISO time this time).
    after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_kill + 3))
    doc = status_at(after)
    assert doc["run"]["state"] == "killed" and doc["run"]["exit_code"] == 137
    assert "SIGKILL" in doc["run"]["exit_meaning"]
    crash = [e for s in rec.samples for e in s.events if e["kind"] == "crash"]
    assert len(crash) == 1 and "exit 137" in crash[0]["text"]
