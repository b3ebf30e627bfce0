"""A hostile probe (a real program in the probe's place, tests/hostile_probe.py) puts terminal
escapes in every string field of its line. No path that shows a probe's strings lets one
through raw: the ``status`` table, ``status --json`` (still valid JSON, the strings kept as
data), ``status --watch``, the app's screen, a recording of those samples read back by
``status --replay`` and by the replay app."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_probe import MARK, PAYLOAD, install, raw_in
from support import screen_text, until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.replay import ReplayApp
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.record.recorder import Recorder
from dflash_tui.core.record.replay import load

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "20251202-095500-1a2b"


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    python = install(tmp_path / "probe")
    monkeypatch.setenv("DFLASH_TUI_PYTHON", python)
    return {**os.environ, "DFLASH_TUI_PYTHON": python}


def dflash(env: dict[str, str], *args: str) -> tuple[int, bytes, bytes]:
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, timeout=120, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def test_the_status_table_shows_every_field_escaped(probe: dict[str, str], tmp_path: Path) -> None:
    rc, out, err = dflash(probe, "status", "--run-root", str(tmp_path))
    assert rc in (0, 1), err
    assert raw_in(out) == [] and raw_in(err) == []
    text = out.decode()
    assert f"id {RUN_ID}\\x1b]0;{MARK}" in text  # the run id, its escape shown, not acted on
    assert text.count(MARK) >= 5  # supervisor, disk, log path, findings too


def test_status_json_stays_json_and_keeps_the_strings_as_data(
    probe: dict[str, str], tmp_path: Path
) -> None:
    _, out, err = dflash(probe, "status", "--run-root", str(tmp_path), "--json")
    assert raw_in(out) == [] and raw_in(err) == []
    doc = json.loads(out)
    assert doc["run"]["id"] == RUN_ID + PAYLOAD


def test_status_watch_prints_its_lines_escaped(probe: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--watch", "--run-root",
         str(tmp_path), "--interval", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=probe,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=6)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert RUN_ID.encode() in out, err[-2000:]
    assert raw_in(out) == [] and raw_in(err) == []


async def test_the_app_screen_shows_no_escape(probe: dict[str, str], tmp_path: Path) -> None:
    app = DflashApp(Config(hosts=(HostConfig(run_root=str(tmp_path)),), interval=0.5))
    async with app.run_test(size=(160, 50)) as pilot:
        await until(pilot, lambda: app.current.last is not None and RUN_ID in screen_text(app))
        await pilot.pause(0.5)
        screen = screen_text(app)
        assert raw_in(screen) == []
        assert app.current.last is not None and app.current.last.snapshot.run is not None
        assert app.current.last.snapshot.run.id == RUN_ID + PAYLOAD  # the hostile line was shown


def _hostile_recording(probe: dict[str, str], tmp_path: Path) -> Path:
    """The hostile probe's samples recorded by the real recorder."""
    run = tmp_path / "rec-run"
    run.mkdir()
    host = HostConfig(run_root=str(tmp_path))
    rec, tracker = Recorder(host, RecordSettings(), "test"), Tracker(host.topology)
    for _ in range(3):
        line = subprocess.run(
            [probe["DFLASH_TUI_PYTHON"], "-", "--once"], input=b"", capture_output=True,
            timeout=30, check=True,
        ).stdout  # fmt: skip
        snap = Snapshot.from_json(line)
        assert snap.run is not None
        snap = snap.__class__(**{**vars(snap), "run": snap.run.__class__(
            **{**vars(snap.run), "dir": str(run)})})  # fmt: skip
        rec.add(snap, tracker.add(snap))
    rec.close()
    return run


async def test_a_hostile_recording_replays_escaped(probe: dict[str, str], tmp_path: Path) -> None:
    run = _hostile_recording(probe, tmp_path)
    rc, out, err = dflash(probe, "status", "--replay", str(run))
    assert rc == 0, err
    assert RUN_ID.encode() in out
    assert raw_in(out) == [] and raw_in(err) == []
    app = ReplayApp(load(run))
    async with app.run_test(size=(160, 50)) as pilot:
        await until(pilot, lambda: RUN_ID in screen_text(app))
        assert raw_in(screen_text(app)) == []
