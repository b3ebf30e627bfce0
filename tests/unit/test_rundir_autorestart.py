"""The auto-restart policy as a pure state machine (supervisord's and circus's rules)."""

from __future__ import annotations

from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import AutoRestart

POLICY = RestartPolicy(enabled=True, retries=3, backoff_s=2, max_backoff_s=5, stable_s=60)


def ended(rid: str, code: int | None, started: float, ended_at: float, **kw: object) -> RunRecord:
    return RunRecord(
        id=rid, dir=f"/r/{rid}", pgid=1, started_at=started, exit_code=code, ended_at=ended_at, **kw
    )  # type: ignore[arg-type]


def test_off_by_default() -> None:
    m = AutoRestart(RestartPolicy())
    assert m.observe(ended("a", 1, 0, 100), "exited", 100).action == "off"


def test_alive_runs_are_watched() -> None:
    m = AutoRestart(POLICY)
    assert m.observe(None, "none", 0).action == "watch"
    run = RunRecord(id="a", dir="/r/a", pgid=1, started_at=0)
    assert m.observe(run, "running", 10).action == "watch"


def test_success_and_requested_stop_are_not_restarted() -> None:
    m = AutoRestart(POLICY)
    assert m.observe(ended("a", 0, 0, 100), "exited", 100).action == "done"
    m = AutoRestart(RestartPolicy(enabled=True, success_codes=frozenset({0, 2})))
    assert m.observe(ended("a", 2, 0, 100), "exited", 100).action == "done"
    stopped = ended("b", 143, 0, 100, kill_requested_at=99.0)
    assert m.observe(stopped, "killed", 100).action == "stopped"


def test_crashes_back_off_growing_then_fatal() -> None:
    m = AutoRestart(POLICY)
    t, waits = 100.0, []
    for i in range(3):
        d = m.observe(ended(f"r{i}", 1, t - 5, t), "exited", t)
        assert d.action == "restart" and d.failures == i + 1
        waits.append(d.at - t)  # type: ignore[operator]
        # The same run seen again: the same decision, not a second count.
        assert m.observe(ended(f"r{i}", 1, t - 5, t), "exited", t + 1) == d
        m.restarted(d.at)  # type: ignore[arg-type]
        t = d.at + 10  # type: ignore[operator]
    assert waits == [2, 4, 5]  # doubling, capped at max_backoff_s
    d = m.observe(ended("r3", 1, t - 5, t), "exited", t)
    assert d.action == "fatal" and "gave up after 3 restarts" in d.message
    # FATAL sticks, whatever happens next.
    assert m.observe(ended("r4", 0, t, t + 100), "exited", t + 100).action == "fatal"


def test_a_run_that_was_stable_resets_the_count() -> None:
    m = AutoRestart(POLICY)
    for i in range(3):
        d = m.observe(ended(f"r{i}", 137, 0, 1), "killed", 1)
        m.restarted(1)
    assert d.failures == 3
    # Up for longer than stable_s before crashing: the count starts again.
    d = m.observe(ended("r9", 1, 100, 500), "exited", 500)
    assert d.action == "restart" and d.failures == 1


def test_running_past_stable_resets_the_count() -> None:
    m = AutoRestart(POLICY)
    m.observe(ended("a", 1, 0, 1), "exited", 1)
    m.restarted(3)
    run = RunRecord(id="b", dir="/r/b", pgid=1, started_at=3)
    m.observe(run, "running", 100)
    assert m.failures == 0


def test_launch_failed_and_vanished_runs_are_crashes() -> None:
    m = AutoRestart(POLICY)
    lf = RunRecord(id="a", dir="/r/a", launch_error="sh: 1: x: not found")
    d = m.observe(lf, "launch-failed", 10)
    assert d.action == "restart" and "not found" in d.message
    m.restarted(12)
    gone = RunRecord(id="b", dir="/r/b", pgid=5, started_at=12)  # no exit code: killed
    assert m.observe(gone, "killed", 20).action == "restart"


def test_flapping_guard() -> None:
    p = RestartPolicy(enabled=True, retries=100, stable_s=1, flap_window_s=60, flap_max=3)
    m = AutoRestart(p)
    t = 0.0
    for i in range(3):
        d = m.observe(ended(f"r{i}", 1, t, t + 2), "exited", t + 2)  # stable: counts reset
        assert d.action == "restart", d
        m.restarted(t + 3)
        t += 5
    d = m.observe(ended("r3", 1, t, t + 2), "exited", t + 2)
    assert d.action == "fatal" and "flapping: 3 restarts in 60 s" in d.message


def test_a_restart_that_cannot_launch_counts_as_a_crash() -> None:
    m = AutoRestart(POLICY)
    m.observe(ended("a", 1, 0, 1), "exited", 1)
    d = m.launch_failed(3, "pct: container 200 not running")
    assert d.action == "restart" and d.failures == 2 and "not running" in d.message


def test_a_transient_end_does_not_leave_a_stale_restart() -> None:
    from dflash_tui.core.base.snapshot import RunRecord
    from dflash_tui.core.base.timings import RestartPolicy
    from dflash_tui.core.control.policy import AutoRestart

    m = AutoRestart(RestartPolicy(enabled=True, backoff_s=1.0))
    m.observe(None, "none", 100.0)
    run = RunRecord(id="r1", dir="/d", pgid=5, started_at=101.0)
    assert m.observe(run, "launch-failed", 101.5).action == "restart"  # a misreading
    assert m.observe(run, "running", 102.0).action == "watch"
    stopped = RunRecord(
        id="r1",
        dir="/d",
        pgid=5,
        started_at=101.0,
        exit_code=143,
        ended_at=110.0,
        kill_requested_at=109.0,
    )
    assert m.observe(stopped, "killed", 111.0).action == "stopped"
