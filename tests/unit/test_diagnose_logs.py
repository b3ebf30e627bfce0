"""log-missing says "the launch failed" only where that is a fact.

An extra watched log (``--log PATH``, config ``run.logs``) that is absent while our own run is
alive and logging is a warning that says it is not the run's log; the run's own log, or a log
its command redirects to, may say the launch failed; with no run launched from here the
missing file is a likely cause, not a fact. topology-mismatch says no more than its causes.
"""

from __future__ import annotations

from typing import Any

from fakes.rows import gpu_row as gpu
from fakes.rows import proc_row as proc

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.diagnosis.finding import Finding
from dflash_tui.core.diagnosis.views import Diagnosis

T0 = 1_764_669_600.0
EXTRA = "/workspace/x.log"
RUN_LOG = "/runs/r1/output.log"


def run(**kw: Any) -> dict[str, Any]:
    return {
        "id": "20261202-090000-abcd",
        "dir": "/runs/r1",
        "command": "sh -c 'while true; do echo step; sleep 1; done'",
        "pid": 500,
        "pgid": 500,
        "start_ticks": 1000,
        "started_at": T0 - 120,
        "log_path": RUN_LOG,
        **kw,
    }


def sample(
    logs: list[dict[str, Any]], run_rec: dict[str, Any] | None, t: float = T0, alive: bool = True
) -> Snapshot:
    procs = [proc(1, 0)] + ([proc(500, 1, 500)] if alive else [])
    return Snapshot.from_dict(
        {
            "time": t,
            "host": "box",
            "telemetry": {"source": "nvidia-smi"},
            "gpus": [gpu(i) for i in range(8)],  # every GPU idle
            "gpu_procs": [],
            "procs": procs,
            "logs": logs,
            "run": run_rec,
        }
    )


def history(logs: list[dict[str, Any]], run_rec: dict[str, Any] | None, **kw: Any) -> Diagnosis:
    """A minute of samples two seconds apart: long past the log grace."""
    return diagnose(
        [sample(logs, run_rec, T0 - 60 + 2 * k, **kw) for k in range(31)], Topology(), live=True
    )


def only(d: Diagnosis, code: str) -> Finding:
    (f,) = [f for f in d.findings if f.code == code]
    return f


def logging_run_logs(extra: str = EXTRA) -> list[dict[str, Any]]:
    return [
        {"path": RUN_LOG, "exists": True, "size": 4000, "is_run_log": True},
        {"path": extra, "exists": False},
    ]


def test_an_absent_extra_log_beside_a_logging_run_is_a_plain_warning() -> None:
    d = history(logging_run_logs(), run())
    assert d.run_state == "running"
    f = only(d, "log-missing")
    assert f.severity == "warning", f
    assert "launch failed" not in f.message and "likely" not in f.message
    assert EXTRA in f.message and "for at least 60s" in f.message  # missing from the first sample
    assert "watched besides run 20261202-090000-abcd's own" in f.message
    assert "says nothing about that launch" in f.message
    assert f.action is None  # launching again would not help


def test_the_topology_finding_is_not_raised_to_error_by_a_live_run() -> None:
    d = history(logging_run_logs(), run(started_at=T0 - 1200))  # past the start-up grace
    topo = only(d, "topology-mismatch")
    # GPUs idle while the run is alive: the idle finding is a warning, and so is its summary.
    assert only(d, "idle").severity == "warning"
    assert topo.severity == "warning", topo
    assert d.worst() == "warning"


def test_the_runs_own_log_missing_still_says_the_launch_failed() -> None:
    logs = [{"path": RUN_LOG, "exists": False, "is_run_log": True}]
    f = only(history(logs, run()), "log-missing")
    assert f.severity == "error"
    assert "own log" in f.message and "so the launch failed" in f.message


def test_a_log_the_runs_command_writes_is_tied_to_the_run() -> None:
    cmd = f"python3 train.py > {EXTRA} 2>&1"
    f = only(history(logging_run_logs(), run(command=cmd)), "log-missing")
    assert f.severity == "error"
    assert "its command writes there" in f.message and "so the launch failed" in f.message


def test_with_no_run_launched_a_failed_launch_is_a_likely_cause_not_a_fact() -> None:
    d = history([{"path": EXTRA, "exists": False}], None, alive=False)
    f = only(d, "log-missing")
    assert f.severity == "warning"
    assert "no run was launched from here" in f.message
    assert "it likely failed before writing a line" in f.message
    assert "so the launch failed" not in f.message
    assert f.action == "launch"


def test_an_absent_extra_log_after_the_run_ended_names_its_state() -> None:
    ended = run(exit_code=0, ended_at=T0 - 90)
    f = only(history(logging_run_logs(), ended, alive=False), "log-missing")
    assert f.severity == "warning" and "is exited" in f.message
    assert "launch failed" not in f.message
