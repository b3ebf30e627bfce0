"""The app records the host it watches (real probe, real job under a temporary run root) while
no live headless supervisor holds the run root; beside a live one it records nothing (the
supervisor records)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from supervise_util import cleanup, cli, record, run_dirs
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host import feeds
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.record.replay import load
from dflash_tui.core.record.segments import segment_files

pytestmark = pytest.mark.slow
SIZE = (120, 40)
JOB = 'i=0; while :; do i=$((i+1)); echo "step=$i loss=2.$i tok/s=28$i"; sleep 0.2; done'


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def recorded(root: Path) -> int:
    dirs = [root / ".record", *(d / "record" for d in run_dirs(root))]
    return sum(len(load(d).samples) for d in dirs if segment_files(d))


async def test_the_app_alone_records_every_sample_it_folds(root: Path) -> None:
    res = cli("launch", "--json", "--run-root", str(root), "--command", JOB, "--start-window", "1")
    assert res.returncode == 0, res.stderr
    app = DflashApp(Config(hosts=(HostConfig(run_root=str(root)),), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 12, timeout=60)
    recorder = app.host_states[0].recorder
    assert recorder is not None and recorder.samples >= app.samples >= 12
    run = run_dirs(root)[0]
    rec = load(run)
    assert recorded(root) == recorder.samples == len(rec.samples)
    assert rec.meta["writer"] == "app" and rec.samples[-1].snap.run is not None
    lines = [ln for s in rec.samples for lg in s.snap.logs for ln in lg.lines]
    assert "step=1 loss=2.1 tok/s=281" in lines


async def test_beside_a_live_supervisor_the_app_leaves_recording_to_it(
    root: Path, tmp_path: Path
) -> None:
    off = tmp_path / "off.toml"
    off.write_text("[record]\nenabled = false\n")  # this supervisor records nothing itself
    res = cli("supervise", "--config", str(off), "--run-root", str(root), "--interval", "0.5",
              "--detach")  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = cli("launch", "--json", "--run-root", str(root), "--command", JOB, "--start-window", "1")
    assert res.returncode == 0, res.stderr
    app = DflashApp(Config(hosts=(HostConfig(run_root=str(root)),), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 8, timeout=60)
        last = app.host_states[0].last
        assert last is not None and last.diagnosis.supervisor is not None
    assert record(root)["pid"] and recorded(root) == 0
    assert not any(d.exists() for d in [root / ".record", *(d / "record" for d in run_dirs(root))])
    cli("supervise", "--stop", "--run-root", str(root))


async def test_a_disk_that_hangs_holds_the_exit_once_and_what_was_left_out_is_in_the_quit_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three hosts' recorders write through the one record thread. Its disk stops answering
    (a recorder's write that hangs): the queue fills and each host's samples are left out.
    At the exit every record's close waits behind that write, and the exit waits for them
    once (not once a host); what was left out, said after the screens are gone, is in the
    quit note."""
    monkeypatch.setattr(feeds, "CLOSE_S", 1.0)
    monkeypatch.setattr(feeds, "STOP_S", 0.2)
    hosts = tuple(HostConfig(run_root=str(tmp_path / n / "runs")) for n in "abc")
    app = DflashApp(Config(hosts=hosts, interval=0.5))
    hang = threading.Event()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: all(s.samples >= 1 for s in app.host_states), timeout=60)
        app.feeds.records.cap = 1
        first = app.host_states[0].recorder
        assert first is not None
        add = first.add

        def stuck(*args: Any) -> None:
            hang.wait(8.0)  # the disk, for longer than the exit waits
            add(*args)

        first.add = stuck  # type: ignore[method-assign]
        left = app.host_states[1]
        await until(pilot, lambda: any(e.kind == "record" for e in left.timeline.events))
        samples = app.samples
        await until(pilot, lambda: app.samples >= samples + 6, timeout=30)
        t0 = time.monotonic()
    took = time.monotonic() - t0
    hang.set()
    assert took < 2.6, took  # one wait of 1 s for the three closes, not three
    note = app.quit_note()
    assert "samples before this were left out" in note, note
