"""The replay app on a recording made from a live-like feed (samples with a probe interval,
step points for the History tab): a paused replay is never shown as stale, a jump folds the
History again up to the sample shown, and the log filter's text box keeps its arrow keys."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from support import screen_text

from dflash_tui.app import scenes
from dflash_tui.app.replay import ReplayApp
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot, StepPoints
from dflash_tui.core.diagnosis.history import RunHistory
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.record.recorder import Recorder
from dflash_tui.core.record.replay import load

SIZE = (120, 40)
SAMPLES = 20


def _recording(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    snaps: list[Snapshot] = []
    for k, s in enumerate(scenes.healthy_run(samples=SAMPLES, step=2.0)):
        s = replace(s, run=replace(s.run, dir=str(run))) if s.run else s
        steps = StepPoints(f"{run}/events.jsonl", 100 * k, ((s.time, k + 1, 3.0 - k / 10, 900.0),))
        snaps.append(replace(s, interval=2.0, steps=steps))
    host = HostConfig(run_root=str(tmp_path))
    rec = Recorder(host, RecordSettings(segment_s=600.0), "test")  # type: ignore[arg-type]
    tracker = Tracker(host.topology)
    for s in snaps:
        rec.add(s, tracker.add(s))
    rec.close()
    return run


def _history(app: ReplayApp) -> RunHistory:
    """What the History tab plots (kept by the host's store whether the tab is shown)."""
    pane = app.pane_of(app.host_states[0])
    assert pane is not None
    return pane.store.history


async def test_a_paused_replay_is_not_stale_and_a_jump_folds_the_history(tmp_path: Path) -> None:
    rec = load(_recording(tmp_path))
    assert len(rec.samples) == SAMPLES and rec.samples[0].snap.interval == 2.0
    app = ReplayApp(rec, at=rec.samples[-1].snap.time)  # opens on the last sample
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await asyncio.sleep(4.0)  # two probe intervals paused: a live app would say stale
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "stale" not in text.lower() and "STALE" not in text, text
        hist = _history(app)
        # Opened at the end: every sample's GPU reading and step point is folded, once.
        assert len(hist.gpus[0].util.points()) == SAMPLES
        assert [round(y, 6) for _, y in hist.loss.points()][:2] == [3.0, 2.9]
        assert len(hist.loss.points()) == SAMPLES
        app.seek(4)  # back: the later points are gone
        await pilot.pause()
        hist = _history(app)
        assert len(hist.gpus[0].util.points()) == 5 and len(hist.loss.points()) == 5


async def test_arrow_keys_in_the_log_filter_do_not_step_the_recording(tmp_path: Path) -> None:
    rec = load(_recording(tmp_path))
    app = ReplayApp(rec)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("right", "right")
        assert app.cursor.index == 2
        await pilot.press("slash", "a", "b", "left", "left", "right")
        await pilot.pause()
        assert app.cursor.index == 2  # the keys moved the text cursor, not the replay
        await pilot.press("escape", "right")
        await pilot.pause()
        assert app.cursor.index == 3  # back on the recording, the arrows step again
