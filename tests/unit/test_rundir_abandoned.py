"""The pure rules behind a run root that lies: an abandoned run directory, and control.sh's
answers that must end with `end`."""

from __future__ import annotations

from dflash_tui.core.base.rundir import parse_report, run_state
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.base.timings import LAUNCH_SETUP_S

NOW = 1_000_000.0


def bare(born: float | None, launcher: int | None) -> RunRecord:
    """A run directory without pid, launch_error or exit (what a SIGKILLed launcher leaves)."""
    return RunRecord(id="20260101-000000-0001", dir="/r/x", born=born, launcher=launcher)


def test_no_launcher_at_work_and_past_the_window_is_launch_failed() -> None:
    assert run_state(bare(NOW - 5, 0), [], NOW, start_window=3) == "launch-failed"
    assert run_state(bare(NOW - 1, 0), [], NOW, start_window=3) == "starting"


def test_a_launcher_still_at_work_keeps_it_starting() -> None:
    assert run_state(bare(NOW - 60, 4242), [], NOW, start_window=3) == "starting"


def test_unknown_launcher_waits_the_launchers_own_limit_too() -> None:
    assert run_state(bare(NOW - 5, None), [], NOW, start_window=3) == "starting"
    late = NOW - 3 - LAUNCH_SETUP_S - 1
    assert run_state(bare(late, None), [], NOW, start_window=3) == "launch-failed"


def test_an_answer_counts_only_with_its_end_line() -> None:
    body = "now 5\nid a\ndir /r/a\nborn 3\nlauncher 0\nverdict none\n"
    assert not parse_report(body).ended
    rep = parse_report(body + "other 7 1 7 7 S 99 sleep\nkill_pending 12\nend\n")
    assert rep.ended and rep.kill_pending == 12
    assert [p.pid for p in rep.others] == [7] and rep.members == ()
    assert rep.record is not None and rep.record.born == 3 and rep.record.launcher == 0
