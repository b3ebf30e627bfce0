"""The probe's ``steps`` key: the run's step events sent incrementally for the History tab
(docs/internals.md, "Probe output")."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from fakes.proberun import ProbeStream, run_probe

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.probe.files import STEPS_MAX, StepReader

RID = "20261202-090000-0000"


def step(s: int, t: float = 1000.0) -> str:
    rec = {"event": "step", "time": t + s, "step": s, "loss": 5.0 / (s + 1), "tok_s": 2000 + s}
    return json.dumps(rec) + "\n"


def run_dir(root: Path) -> Path:
    d = root / RID
    d.mkdir(parents=True)
    (d / "pid").write_text(f"{os.getpid()} {os.getpgid(0)} 1\n")
    return d


def test_each_sample_sends_only_the_new_steps(tmp_path: Path) -> None:
    d = run_dir(tmp_path)
    events = d / "events.jsonl"
    events.write_text('{"event":"started","time":999}\n' + step(0) + step(1))
    with ProbeStream("--no-nvml", f"--run-root={tmp_path}", interval=0.2) as s:
        first = s.next()
        assert first["steps"]["from"] == 0 and first["steps"]["path"] == str(events)
        assert [p[1] for p in first["steps"]["points"]] == [0, 1]
        with events.open("a") as f:
            f.write(step(2) + step(3) + '{"event":"step","time":1')  # a line being written
        got = s.until(lambda x: bool(x["steps"]["points"]))[-1]["steps"]
        assert [p[1] for p in got["points"]] == [2, 3] and got["from"] > 0
        with events.open("a") as f:
            f.write('004,"step":4,"loss":1.0,"tok_s":2004}\n')
        got = s.until(lambda x: bool(x["steps"]["points"]))[-1]["steps"]
        assert got["points"] == [[1004, 4, 1.0, 2004]]
    snap = Snapshot.from_dict(first)
    assert snap.steps is not None and snap.steps.points[1] == (1001.0, 1, 2.5, 2001.0)


def test_a_long_backlog_is_sent_thinned_and_a_shrunk_file_from_the_start(tmp_path: Path) -> None:
    d = run_dir(tmp_path)
    events = d / "events.jsonl"
    events.write_text("".join(step(s) for s in range(5 * STEPS_MAX)))
    reader, errors = StepReader(), []  # type: ignore[var-annotated]
    run = {"events_path": str(events)}
    got = reader.read(run, errors)
    assert got["thinned"] == 5 and len(got["points"]) == STEPS_MAX
    steps = [p[1] for p in got["points"]]
    assert steps[0] == 0 and steps[-1] >= 5 * STEPS_MAX - 10  # the whole backlog's span
    gaps = {b - a for a, b in itertools.pairwise(steps)}
    assert min(gaps) >= 4 and max(gaps) <= 6  # evenly spread (lines differ in length)
    assert reader.read(run, errors)["points"] == []
    events.write_text(step(7))  # replaced: read again from the start
    again = reader.read(run, errors)
    assert again["from"] == 0 and [p[1] for p in again["points"]] == [7]
    assert errors == []


def test_once_sends_no_steps(tmp_path: Path) -> None:
    d = run_dir(tmp_path)
    (d / "events.jsonl").write_text(step(0))
    out = run_probe("--no-nvml", f"--run-root={tmp_path}")
    assert "steps" not in out and out["last_step"]["step"] == 0
