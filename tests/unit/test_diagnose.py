"""The diagnosis rules on many scenarios: labels must follow from rules, not from one fixture."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.rows import gpu_row as gpu
from fakes.rows import proc_row as proc

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.thresholds import Thresholds

T0 = 1_764_669_600.0
SEED = [
    (0, 0, 0),
    (1, 0, 0),
    (2, 0, 100),
    (3, 0, 100),
    (4, 0, 0),
    (5, 0, 0),
    (6, 0, 0),
    (7, 0, 100),
]


def snap(
    gpus: list[dict[str, Any]],
    *,
    t: float = T0,
    procs: list[dict[str, Any]] | None = None,
    gpu_procs: list[dict[str, Any]] | None = None,
    logs: list[dict[str, Any]] | None = None,
    run: dict[str, Any] | None = None,
    source: str = "nvidia-smi",
    error: str | None = None,
) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "host": "box",
            "telemetry": {"source": source, "error": error},
            "gpus": gpus,
            "gpu_procs": gpu_procs or [],
            "procs": procs or [proc(1, 0)],
            "logs": logs or [],
            "run": run,
        }
    )


def labels(diag: Any) -> dict[int, tuple[str, ...]]:
    return {v.index: v.codes for v in diag.gpus}


def codes(diag: Any) -> set[str]:
    return {f.code for f in diag.findings}


def finding(diag: Any, code: str) -> Any:
    return next(f for f in diag.findings if f.code == code)


def test_seed_incident() -> None:
    s = snap(
        [gpu(i, used, util) for i, used, util in SEED],
        logs=[{"path": "/workspace/train_stdout_flex6.log", "exists": False}],
    )
    d = diagnose([s], Topology())
    got = labels(d)
    for i in (2, 3, 7):
        assert got[i] == ("busy-no-memory",)
    for i in (0, 1, 4, 5, 6):
        assert got[i] == ("idle",)
    assert {"log-missing", "topology-mismatch", "busy-no-memory", "idle"} <= codes(d)
    topo = finding(d, "topology-mismatch")
    # No run is alive: an idle GPU waits for one (fit); only the phantom loads are not.
    assert "target 3/5 and drafter 2/3 GPUs healthy" in topo.message
    assert "Next: fix GPU 2 (busy-no-memory), GPU 3 (busy-no-memory), GPU 7" in topo.message
    assert "/workspace/train_stdout_flex6.log" in finding(d, "log-missing").message
    busy = finding(d, "busy-no-memory")
    assert busy.gpus == (2, 3, 7)
    # Never a bare `nvidia-smi -r`: it would reset every GPU of the machine.
    assert "(nvidia-smi -r -i N, for N in 2, 3, 7)" in busy.message
    one = diagnose([snap([gpu(0), gpu(1, 0, 100)])], Topology.parse("0:1"))
    assert "(nvidia-smi -r -i 1)" in finding(one, "busy-no-memory").message


@pytest.mark.parametrize("spec", ["4:4", "0-5:6,7", "0,1,2:3"])
def test_other_topologies_use_the_same_rules(spec: str) -> None:
    topo = Topology.parse(spec.replace("4:4", "0-3:4-7"))
    s = snap([gpu(i, 0, 100 if i == 3 else 0) for i in range(8)])
    d = diagnose([s], topo)
    for v in d.gpus:
        if v.index == 3:
            expect = ("busy-no-memory",)
        elif v.role == "unassigned":
            expect = ("ok",)
        else:
            expect = ("idle",)
        assert v.codes == expect, (spec, v.index)
    t, d_ = d.healthy("target"), d.healthy("drafter")  # idle, no run: fit; GPU 3 is not
    assert t == (len(topo.target) - (3 in topo.target), len(topo.target))
    assert d_ == (len(topo.drafter) - (3 in topo.drafter), len(topo.drafter))


def running_run(pgid: int = 500, **kw: Any) -> dict[str, Any]:
    return {
        "id": "20261202-090000-abcd",
        "dir": "/runs/x",
        "pid": pgid,
        "pgid": pgid,
        "start_ticks": 1000,
        "started_at": T0 - 600,
        **kw,
    }


def test_healthy_run_all_ok() -> None:
    procs = [proc(1, 0), proc(500, 1, 500), proc(501, 500, 500)]
    gp = [
        {"pid": 501, "gpu_uuid": f"GPU-{i}", "used_mib": 40000, "name": "python3"} for i in range(8)
    ]
    s = snap([gpu(i, 40000, 97) for i in range(8)], procs=procs, gpu_procs=gp, run=running_run())
    d = diagnose([s], Topology())
    assert all(v.codes == ("ok",) for v in d.gpus)
    assert all(p.owner == "run" for v in d.gpus for p in v.processes)
    assert d.run_state == "running"
    assert "topology-mismatch" not in codes(d)
    assert d.healthy("target") == (5, 5)


def test_orphan_holding_70gb_after_run_died() -> None:
    # The run's group is gone (exit 137); a worker that escaped to init still holds GPU 6.
    run = running_run(exit_code=137, ended_at=T0 - 60)
    procs = [proc(1, 0), proc(777, 1, 777, start=2000)]
    gp = [{"pid": 777, "gpu_uuid": "GPU-6", "used_mib": 70000, "name": "python3"}]
    gpus = [gpu(i, 70000 if i == 6 else 0, 0) for i in range(8)]
    d = diagnose([snap(gpus, procs=procs, gpu_procs=gp, run=run)], Topology())
    assert labels(d)[6] == ("orphan-process",)
    assert d.gpus[6].processes[0].owner == "orphan"
    assert d.run_state == "killed"
    f = finding(d, "orphan-process")
    assert f.severity == "error" and "777" in f.message
    ex = finding(d, "run-exited")
    assert "137" in ex.message and "SIGKILL" in ex.message and "OOM" in ex.message


def test_leftover_of_earlier_run_is_orphan_even_with_parent() -> None:
    run = running_run(pgid=900, earlier_pgids=[300])
    procs = [proc(1, 0), proc(900, 1, 900), proc(301, 250, 300, 300)]
    gp = [{"pid": 301, "gpu_uuid": "GPU-5", "used_mib": 9000, "name": "python3"}]
    d = diagnose([snap([gpu(i) for i in range(8)], procs=procs, gpu_procs=gp, run=run)], Topology())
    assert "orphan-process" in labels(d)[5]


def test_foreign_process_on_target_gpu() -> None:
    procs = [proc(1, 0), proc(40, 1, 40), proc(4242, 40, 4242, cmd="python other_job.py")]
    gp = [{"pid": 4242, "gpu_uuid": "GPU-1", "used_mib": 20000, "name": "python"}]
    d = diagnose(
        [
            snap(
                [gpu(i, 20000 if i == 1 else 0, 60 if i == 1 else 0) for i in range(8)],
                procs=procs,
                gpu_procs=gp,
            )
        ],
        Topology(),
    )
    assert labels(d)[1] == ("foreign-process",)
    assert d.gpus[1].processes[0].owner == "foreign"
    assert d.gpus[1].processes[0].cmd == "python other_job.py"


def test_activity_outside_topology() -> None:
    topo = Topology.parse("0-2:3-4")
    d = diagnose(
        [snap([gpu(i, 30000 if i == 6 else 0, 80 if i == 6 else 0) for i in range(8)])], topo
    )
    assert labels(d)[6] == ("unexpected-activity",)
    assert labels(d)[7] == ("ok",)
    assert finding(d, "unexpected-activity").gpus == (6,)


def test_missing_gpu_of_topology() -> None:
    d = diagnose([snap([gpu(i) for i in range(6)])], Topology())
    assert labels(d)[6] == ("missing",) and labels(d)[7] == ("missing",)
    assert d.gpus[6].gpu is None
    assert finding(d, "missing").severity == "error"


def test_na_fields_do_not_crash_and_stay_unknown() -> None:
    gpus = [gpu(i, None, None, temp_c=None, power_w=None) for i in range(8)]
    d = diagnose([snap(gpus)], Topology())
    assert all(v.codes == ("idle",) for v in d.gpus)


def test_near_oom_ecc_and_throttle() -> None:
    gpus = [
        gpu(0, 140000, 99),
        gpu(1, 10, 0, ecc_uncorrected=3),
        gpu(2, 10, 0, throttle_reasons=0x40),
        gpu(3, 10, 0, throttle_reasons=0x4),
    ]
    gp = [{"pid": 9, "gpu_uuid": "GPU-0", "used_mib": 140000, "name": "x"}]
    d = diagnose([snap(gpus, gpu_procs=gp, procs=[proc(1, 0), proc(9, 1)])], Topology.parse("0-3:"))
    assert "near-oom" in labels(d)[0]
    assert "ecc-errors" in labels(d)[1]
    assert "throttled" in labels(d)[2]
    assert "throttled" not in labels(d)[3]  # SW power cap at full load is normal


def test_unknown_owner_when_pid_not_visible() -> None:
    # Inside a container the driver reports a host PID the probe cannot see.
    gp = [{"pid": 123456, "gpu_uuid": "GPU-0", "used_mib": 5000, "name": "python3"}]
    d = diagnose(
        [
            snap(
                [gpu(i, 5000 if i == 0 else 0, 50 if i == 0 else 0) for i in range(8)], gpu_procs=gp
            )
        ],
        Topology(),
    )
    assert d.gpus[0].processes[0].owner == "unknown"
    assert "orphan-process" not in labels(d)[0]


def test_container_pid_mapping_decides_ownership() -> None:
    procs = [proc(1, 0), proc(12, 1, 12)]
    gp = [{"pid": 99999, "container_pid": 12, "gpu_uuid": "GPU-0", "used_mib": 5000, "name": "p"}]
    d = diagnose(
        [snap([gpu(0, 5000, 50)], procs=procs, gpu_procs=gp, run=running_run(pgid=12))],
        Topology.parse("0:"),
    )
    assert d.gpus[0].processes[0].owner == "run"


def test_live_mode_needs_persistence() -> None:
    th = Thresholds(persist_s=6.0)
    quiet = [gpu(i) for i in range(8)]
    busy = [gpu(i, 0, 100 if i == 2 else 0) for i in range(8)]
    hist = [snap(quiet, t=T0 + k) for k in range(10)] + [
        snap(busy, t=T0 + 10 + k) for k in range(3)
    ]
    d = diagnose(hist, Topology(), th, live=True)
    assert "busy-no-memory" not in labels(d)[2]
    hist += [snap(busy, t=T0 + 13 + k) for k in range(5)]
    d = diagnose(hist, Topology(), th, live=True)
    assert labels(d)[2] == ("busy-no-memory",)
    assert d.gpus[2].labels[0].since == T0 + 10
    # one-shot (not live) reports at once
    assert labels(diagnose([snap(busy)], Topology(), th))[2] == ("busy-no-memory",)


def test_idle_severity_depends_on_run() -> None:
    quiet = [gpu(i) for i in range(8)]
    d = diagnose([snap(quiet)], Topology())
    assert finding(d, "idle").severity == "info"
    procs = [proc(1, 0), proc(500, 1, 500)]
    d = diagnose([snap(quiet, procs=procs, run=running_run())], Topology())
    assert d.run_state == "running"
    assert finding(d, "idle").severity == "warning"
    # The summary says no more than its causes: idle GPUs beside a live
    # run are a warning, and so is the mismatch; a missing GPU makes both errors.
    assert finding(d, "topology-mismatch").severity == "warning"
    d = diagnose([snap(quiet[:7], procs=procs, run=running_run())], Topology())
    assert finding(d, "missing").severity == "error"
    assert finding(d, "topology-mismatch").severity == "error"


def test_missing_log_duration_tracked_across_samples() -> None:
    log = [{"path": "/w/a b's.log", "exists": False}]
    hist = [snap([gpu(0)], t=T0 + k * 2, logs=log) for k in range(31)]
    d = diagnose(hist, Topology.parse("0:"))
    assert d.logs[0].missing_since is not None
    assert "for at least 60s" in finding(d, "log-missing").message


def test_launch_failed_and_exit_codes() -> None:
    run = running_run(launch_error="sh: 1: nonexistent-command: not found")
    d = diagnose([snap([gpu(0)], run=run)], Topology.parse("0:"))
    assert d.run_state == "launch-failed"
    assert "nonexistent-command" in finding(d, "launch-failed").message
    run = running_run(exit_code=3, ended_at=T0 - 5)
    d = diagnose([snap([gpu(0)], run=run)], Topology.parse("0:"))
    assert d.run_state == "exited"
    assert finding(d, "run-exited").severity == "error"
    run = running_run(exit_code=143, ended_at=T0 - 5, kill_requested_at=T0 - 6)
    d = diagnose([snap([gpu(0)], run=run)], Topology.parse("0:"))
    assert d.run_state == "killed" and finding(d, "run-exited").severity == "info"


def test_no_progress() -> None:
    procs = [proc(1, 0), proc(500, 1, 500)]
    prog = Progress(last_step=40, last_step_at=T0 - 300, typical_interval=2.0)
    d = diagnose(
        [snap([gpu(0)], procs=procs, run=running_run())], Topology.parse("0:"), progress=prog
    )
    f = finding(d, "no-progress")
    assert "5m00s" in f.message and "40" in f.message
    prog = Progress(last_step=40, last_step_at=T0 - 5, typical_interval=2.0)
    d = diagnose(
        [snap([gpu(0)], procs=procs, run=running_run())], Topology.parse("0:"), progress=prog
    )
    assert "no-progress" not in codes(d)


def test_telemetry_unavailable_keeps_run_and_logs() -> None:
    s = snap(
        [],
        source="none",
        error="no NVML and no nvidia-smi on PATH",
        logs=[{"path": "/x.log", "exists": False}],
    )
    d = diagnose([s], Topology())
    assert "telemetry-unavailable" in codes(d)
    assert "no nvidia-smi" in finding(d, "telemetry-unavailable").message
    assert "log-missing" in codes(d)
    assert "topology-mismatch" not in codes(d) and "missing" not in codes(d)


def test_malformed_rows_become_a_finding() -> None:
    s = Snapshot.from_dict(
        {
            "time": T0,
            "telemetry": {"source": "nvidia-smi"},
            "gpus": [gpu(0), "garbage", {"index": "x"}],
            "errors": ["line 3 bad"],
        }
    )
    assert len(s.gpus) == 1
    d = diagnose([s], Topology.parse("0:"))
    assert "line 3 bad" in finding(d, "telemetry-degraded").message


def test_shell_probe_is_a_degraded_finding_not_a_malformed_one() -> None:
    s = Snapshot.from_dict(
        {
            "time": T0,
            "probe_mode": "shell",
            "telemetry": {"source": "nvidia-smi"},
            "gpus": [gpu(0)],
            "errors": ["degraded probe (shell): python3 not found on box;"],
        }
    )
    d = diagnose([s], Topology.parse("0:"))
    assert "python3 not found" in finding(d, "probe-degraded").message
    assert "telemetry-degraded" not in codes(d)


def test_a_slow_start_reported_failed_but_alive_is_running() -> None:
    run = running_run(launch_error="the job did not start: ")
    procs = [proc(1, 0), proc(500, 1, 500)]
    d = diagnose([snap([gpu(0)], procs=procs, run=run)], Topology.parse("0:"))
    assert d.run_state == "running" and "launch-failed" not in codes(d)


def test_loaded_gpus_with_hidden_processes_are_not_idle() -> None:
    # Inside an LXC container nvidia-smi often lists no process although the run is there.
    d = diagnose([snap([gpu(i, 70000, 100) for i in range(8)])], Topology())
    assert all(v.codes == ("ok",) for v in d.gpus)
    f = finding(d, "processes-not-visible")
    assert f.gpus == tuple(range(8)) and f.severity == "info"
    assert "idle" not in codes(d) and "topology-mismatch" not in codes(d)


def test_a_reused_pgid_of_an_earlier_run_is_not_an_orphan() -> None:
    # Run 300 (leader started at tick 1000) is long gone; the kernel gave 300 to a new job.
    run = running_run(pgid=900, earlier_runs=[[300, 1000]], earlier_pgids=[300])
    reused = proc(300, 250, 300, start=5000, cmd="python other_users_job.py")
    procs = [proc(1, 0), proc(900, 1, 900), proc(250, 1, 250), reused]
    gp = [{"pid": 300, "gpu_uuid": "GPU-7", "used_mib": 9000, "name": "python"}]
    d = diagnose([snap([gpu(i) for i in range(8)], procs=procs, gpu_procs=gp, run=run)], Topology())
    assert d.gpus[7].processes[0].owner == "foreign"
    # A real leftover of run 300: its group, born after that run's leader, leader gone.
    left = proc(301, 250, 300, start=1200)
    gp = [{"pid": 301, "gpu_uuid": "GPU-7", "used_mib": 9000, "name": "python"}]
    d = diagnose(
        [snap([gpu(i) for i in range(8)], procs=[*procs[:3], left], gpu_procs=gp, run=run)],
        Topology(),
    )
    assert d.gpus[7].processes[0].owner == "orphan"


def test_a_run_dir_without_pid_file_yet_is_starting() -> None:
    # The probe can read the run directory between its creation and the wrapper's pid file.
    run = {"id": "20261202-090000-abcd", "dir": "/runs/x"}
    d = diagnose([snap([gpu(0)], run=run)], Topology.parse("0:"))
    assert d.run_state == "starting" and "launch-failed" not in codes(d)
    # A start time is written after the pid file: with no readable pid it is a broken record.
    broken = diagnose([snap([gpu(0)], run={**run, "started_at": T0 - 600})], Topology.parse("0:"))
    assert broken.run_state == "launch-failed"
    assert "no readable pid file" in finding(broken, "launch-failed").message
