"""The replay app (Pilot) on the shipped seed recording (``replay --demo seed``): it opens
read-only with no control key, steps and plays through the six minutes, and every panel
shows the state at the sample shown; the recording is the one its script builds from the
fixture; ``status --replay`` reads it too."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from dflash_tui.app.replay import ReplayApp
from dflash_tui.app.screens.timebar import TimeBar
from dflash_tui.cli.replay import demo_dir
from dflash_tui.core.record.replay import load, parse_time

ROOT = Path(__file__).resolve().parents[2]
SIZE = (120, 40)


def codes(app: ReplayApp) -> set[str]:
    last = app.host_states[0].last
    assert last is not None
    return {f.code for f in last.diagnosis.findings}


async def test_the_seed_incident_replays_read_only_step_by_step_and_played() -> None:
    rec = load(demo_dir("seed"))
    assert len(rec.samples) == 13 and rec.notes == []
    app = ReplayApp(rec)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        bar = app.screen.query_one(TimeBar)
        assert "sample 1/13" in bar.text and "+0m00s of 6m00s" in bar.text
        assert {"busy-no-memory", "log-missing", "topology-mismatch"} <= codes(app)
        for action in ("launch", "kill", "restart", "kill_process", "auto_restart"):
            assert app.check_action(action, ()) is False  # absent: footer, help, palette, key
        await pilot.press("l", "k", "r")
        assert len(app.screen_stack) == 1  # no confirm dialog opened
        await pilot.press("right", "right")
        assert "sample 3/13" in bar.text and "+1m00s" in bar.text
        await pilot.press("left")
        assert "sample 2/13" in bar.text
        await pilot.press(*["plus"] * 5, "space")  # 60x: six minutes in six seconds
        assert app.playing and app.speed == 60
        deadline = time.monotonic() + 60
        while app.cursor.index < 12:
            assert time.monotonic() < deadline, bar.text
            await pilot.pause(0.2)
        await pilot.pause()
        assert not app.playing and "sample 13/13" in bar.text
        last = app.host_states[0].last
        assert last is not None and last.snapshot.time == rec.end
        missing = [f for f in last.diagnosis.findings if f.code == "log-missing"]
        assert "for at least 6m00s" in missing[0].message
    assert app.quit_note() == ""  # nothing of a recording keeps running


async def test_at_opens_the_replay_at_that_moment() -> None:
    rec = load(demo_dir("seed"))
    app = ReplayApp(rec, at=parse_time("+3m10s", rec))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        bar = app.screen.query_one(TimeBar)
        assert "sample 7/13" in bar.text and "+3m00s of 6m00s" in bar.text
        last = app.host_states[0].last
        assert last is not None and last.snapshot.time == rec.start + 180


def test_the_shipped_recording_is_what_its_script_builds_from_the_fixture() -> None:
    res = subprocess.run(
        [sys.executable, "tools/make_seed_recording.py", "--check"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


def test_status_replay_reads_the_demo_at_a_time() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", "--replay",
         str(demo_dir("seed")), "--at", "2025-12-02T10:03:00Z", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["time"] == "2025-12-02T10:03:00Z" and doc["replay"]["sample"] == 6
    assert doc["run"]["state"] == "none" and doc["host"] == "gpu-box"
    busy = [g["index"] for g in doc["gpus"] if "busy-no-memory" in g["labels"]]
    assert busy == [2, 3, 7]
