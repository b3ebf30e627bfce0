"""The probe's reading of the run directory (docs/internals.md, "The run directory")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakes.proberun import run_probe

from dflash_tui.core.base.rundir import run_state
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.probe.main import read_run_dir

RUN_KEYS = {
    "id", "dir", "command", "pid", "pgid", "start_ticks", "started_at", "exit_code", "ended_at",
    "launch_error", "kill_requested_at", "log_path", "events_path", "earlier_pgids", "earlier_runs",
    "born",
}  # fmt: skip


def make_run(root: Path, rid: str, **files: str) -> Path:
    d = root / rid
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def test_no_run_root_or_no_run(tmp_path: Path) -> None:
    errors: list[str] = []
    assert read_run_dir(None, errors) is None
    assert read_run_dir(str(tmp_path / "absent"), errors) is None
    (tmp_path / "file").write_text("")
    assert read_run_dir(str(tmp_path / "file"), errors) is None
    (tmp_path / "runs" / "not-a-run").mkdir(parents=True)
    (tmp_path / "runs" / ".lock").mkdir()
    (tmp_path / "runs" / "20991231-235959-ffff").write_text("a file, not a run")
    assert read_run_dir(str(tmp_path / "runs"), errors) is None
    assert errors == []


def test_latest_run_with_every_file(tmp_path: Path) -> None:
    make_run(tmp_path, "20261202-090000-0001", pid="100 100 500\n")
    make_run(tmp_path, "20261202-090000-0000", pid="90 90 400\n")
    make_run(tmp_path, "20261201-235959-beef", pid="80 81 300\n")
    d = make_run(
        tmp_path,
        "20261202-095959-a0b1",
        pid="4242 4242 123456\n",
        started_at="1764669600.5\n",
        exit="137 1764669700.25\n",
        command="python3 train.py --name 'a b' \"$X\"\n",
        kill_requested="1764669650\n",
        workdir="/workspace\n",
    )
    errors: list[str] = []
    run = read_run_dir(str(tmp_path), errors)
    assert errors == []
    assert run == {
        "id": "20261202-095959-a0b1",
        "dir": str(d),
        "command": "python3 train.py --name 'a b' \"$X\"",
        "pid": 4242,
        "pgid": 4242,
        "start_ticks": 123456,
        "started_at": 1764669600.5,
        "exit_code": 137,
        "ended_at": 1764669700.25,
        "launch_error": None,
        "kill_requested_at": 1764669650.0,
        "born": None,  # only without a pid file
        "log_path": str(d / "output.log"),
        "events_path": str(d / "events.jsonl"),
        "earlier_pgids": [81, 90, 100],
        "earlier_runs": [[81, 300], [90, 400], [100, 500]],
    }
    rec = Snapshot.from_dict({"time": 1.0, "run": run}).run
    assert rec is not None and rec.exit_code == 137 and rec.earlier_pgids == (81, 90, 100)
    assert rec.earlier_runs == ((81, 300), (90, 400), (100, 500))
    assert run_state(rec, [], now=1764669800.0) == "killed"


def test_launch_error_and_a_run_being_written(tmp_path: Path) -> None:
    make_run(tmp_path, "20261202-090000-0000", launch_error="pct: container 200 not running\n")
    run = read_run_dir(str(tmp_path), [])
    assert run is not None and run["launch_error"] == "pct: container 200 not running"
    assert run["pid"] is None and run["command"] is None and run["exit_code"] is None
    make_run(tmp_path, "20261202-090001-0000", pid="", launch_error="")
    errors: list[str] = []
    run = read_run_dir(str(tmp_path), errors)
    assert run is not None and run["pid"] is None and errors == []  # empty pid: still being written
    assert run["launch_error"] == "launch failed (empty launch_error file)"
    assert run["earlier_pgids"] == []


def test_malformed_files_are_null_and_reported(tmp_path: Path) -> None:
    make_run(tmp_path, "20261202-080000-0000", pid="garbage\n")
    make_run(
        tmp_path,
        "20261202-090000-0000",
        pid="12 x 5\n",
        started_at="yesterday\n",
        exit="0 nan\n",
        kill_requested="\xff",
    )
    errors: list[str] = []
    run = read_run_dir(str(tmp_path), errors)
    assert run is not None
    assert (run["pid"], run["pgid"], run["start_ticks"]) == (None, None, None)
    assert run["started_at"] is None and run["exit_code"] is None and run["ended_at"] is None
    assert run["kill_requested_at"] is None and run["earlier_pgids"] == []
    assert len(errors) == 5
    assert all(e.startswith("run 2026120") and "malformed" in e for e in errors)
    assert any("malformed pid file: 'garbage\\n'" in e for e in errors)


def test_earlier_pgids_are_the_last_50(tmp_path: Path) -> None:
    for i in range(60):
        make_run(
            tmp_path, f"20261202-09{i // 60:02d}{i % 60:02d}-0000", pid=f"{i + 1000} {i + 1}\n"
        )
    run = read_run_dir(str(tmp_path), [])
    assert run is not None and run["id"] == "20261202-090059-0000" and run["pgid"] == 60
    assert run["earlier_pgids"] == list(range(10, 60))


def test_run_root_expands_home_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_run(tmp_path / "state" / "runs", "20261202-090000-0000", pid="1 1 1\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("STATE", str(tmp_path / "state"))
    for root in ("~/state/runs", "$HOME/state/runs", "${HOME}/state/runs"):
        run = read_run_dir(root, [])
        assert run is not None and run["dir"] == str(tmp_path / "state" / "runs" / run["id"])
    # Other variables are not expanded, as control.sh refuses them: both read one directory.
    assert read_run_dir("$STATE/runs", []) is None


def test_probe_reports_the_run_and_tails_its_log_first(tmp_path: Path) -> None:
    root = tmp_path / "my runs"
    d = make_run(root, "20261202-090000-0000", pid=f"{os.getpid()} {os.getpgid(0)} 1\n")
    (d / "output.log").write_text("step=1 loss=2.0\nstep=2 loss=1.9\n")
    other = tmp_path / "other.log"
    out = run_probe(
        "--no-nvml", "--run-root", str(root), "--log", str(other), "--log", str(d / "output.log"),
    )  # fmt: skip
    assert set(out["run"]) == RUN_KEYS
    assert out["run"]["id"] == "20261202-090000-0000" and out["run"]["pid"] == os.getpid()
    run_log, extra = out["logs"]  # the run's own log first; a repeated path only once
    assert run_log["path"] == str(d / "output.log") and run_log["is_run_log"] is True
    assert run_log["lines"] == ["step=1 loss=2.0", "step=2 loss=1.9"]
    assert extra["path"] == str(other) and extra["exists"] is False and not extra["is_run_log"]
    assert out["errors"] == []
    snap = Snapshot.from_dict(out)
    assert snap.run is not None and snap.logs[0].is_run_log
