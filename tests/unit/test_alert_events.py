"""What is worth an alert (pure, shared by the supervisor and the app): a run's end once, only
for a run seen alive, never for one stopped on request; a finding code once while it holds."""

from __future__ import annotations

from dflash_tui.core.alerts.events import STOPPED, FindingWatch, RunWatch
from dflash_tui.core.base.snapshot import RunRecord
from dflash_tui.core.diagnosis.finding import Finding

OK = frozenset({0})


def run(rid: str = "r1", **kw: object) -> RunRecord:
    return RunRecord(id=rid, dir=f"/runs/{rid}", **kw)  # type: ignore[arg-type]


def test_a_run_seen_alive_then_ended_is_said_once() -> None:
    w = RunWatch()
    assert w.observe(run(), "running", OK) is None
    said = w.observe(run(exit_code=137), "exited", OK)
    assert said is not None and said.code == "run-exited" and said.severity == "error"
    assert "exit 137" in said.message and said.run_id == "r1"
    assert w.observe(run(exit_code=137), "exited", OK) is None  # once


def test_finished_launch_failed_stopped_and_never_seen() -> None:
    w = RunWatch()
    w.observe(run(), "running", OK)
    done = w.observe(run(exit_code=0), "exited", OK)
    assert done is not None and done.code == "run-finished" and done.severity == "info"
    w.observe(run("r2"), "starting", OK)
    failed = w.observe(run("r2", launch_error="no such file"), "launch-failed", OK)
    assert (
        failed is not None and failed.code == "launch-failed" and "no such file" in failed.message
    )
    w.observe(run("r3"), "running", OK)
    stopped = w.observe(run("r3", exit_code=143, kill_requested_at=1.0), "killed", OK)
    assert stopped is not None and stopped.code == STOPPED
    assert RunWatch().observe(run("old", exit_code=1), "exited", OK) is None  # never seen alive


def test_a_finding_code_once_while_it_holds() -> None:
    w = FindingWatch()
    oom = [
        Finding("near-oom", "warning", (1,), "GPU 1"),
        Finding("near-oom", "warning", (2,), "GPU 2"),
    ]
    info = Finding("telemetry-degraded", "info", (), "x")
    exited = Finding("run-exited", "error", (), "left to RunWatch")
    assert [s.code for s in w.observe([*oom, info, exited])] == ["near-oom"]
    assert w.observe(oom) == []  # still holding
    assert w.observe([]) == []
    assert [s.message for s in w.observe(oom[1:])] == ["GPU 2"]  # back: said again
