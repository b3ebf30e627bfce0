"""What a launch result says it started (tui/core/control/launch.py, ``LaunchResult.started``),
from the results the launch itself makes: a run started, whether it lives or ended in its
start window; nothing started when refused beside a live run, or when the link went and the
run read back cannot be told the launch's."""

from __future__ import annotations

import dataclasses

from dflash_tui.core.base.rundir import RunReport
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.control.launch import LaunchResult, _launch_result, _lost_launch
from dflash_tui.core.link.errors import TransportError

RECORD = RunRecord(id="0007", dir="/runs/0007", pid=40, pgid=40, started_at=100.0)


def test_a_link_lost_mid_launch_is_no_run_started_even_with_the_latest_run_named() -> None:
    rep = RunReport(now=101.0, record=RECORD)
    unclear = _lost_launch(rep, TransportError("reset"), None)
    assert unclear.run_id == "0007" and not unclear.started
    older = _lost_launch(rep, TransportError("reset"), False)
    assert older.run_id is None and not older.started


def test_a_run_that_ended_in_its_start_window_was_started() -> None:
    ended = RunRecord(id="0008", dir="/runs/0008", pid=41, pgid=41, started_at=100.0)
    gone = dataclasses.replace(ended, exit_code=3, ended_at=100.5)
    res = _launch_result(RunReport(now=101.0, record=gone), 3.0, ())
    assert not res.ok and res.run_id == "0008" and res.started


def test_a_refused_launch_started_nothing() -> None:
    refused = LaunchResult(False, "running", "run 0007 is running", "0007", refused=True)
    assert not refused.started
