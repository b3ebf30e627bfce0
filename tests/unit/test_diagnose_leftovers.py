"""Leftovers on the GPUs and a diverging run: what the diagnosis may claim, on what evidence.

- A GPU process whose PID is not in the host's process table, with no live run owning it, is a
  leftover (``orphan-process``, owner ``orphan``), never ``ok`` nor healthy. Where the table is
  not the host's (a container without PID mapping) it stays ``unknown``, but the GPU is still
  not counted healthy while no run of ours is alive.
- A process only reparented to init is not blamed on our runs (warning, careful wording); one
  that the group, session or start time ties to a run of ours is (error, "left by run ...").
- A non-finite loss in the latest step of a live run is ``loss-not-finite``.
"""

from __future__ import annotations

import re
from typing import Any

from fakes.rows import gpu_row as gpu
from fakes.rows import proc_row

from dflash_train.topology import Topology
from dflash_tui.cli.table import render
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.diagnosis.document import to_json
from dflash_tui.core.diagnosis.progress import Metric, Progress
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis

T0 = 1_764_669_600.0
BOOT = T0 - 86_400.0  # the machine booted a day ago
HZ = 100
RUN_ID = "20261202-090000-abcd"


def ticks(at: float) -> int:
    """start_ticks of a process started at epoch ``at``."""
    return int((at - BOOT) * HZ)


def proc(
    pid: int,
    ppid: int,
    pgid: int | None = None,
    sid: int | None = None,
    start: int | None = None,
    user: str = "root",
    cmd: str = "python3 train.py",
) -> dict[str, Any]:
    """Started an hour ago unless told; its PID namespace is the host's."""
    start = ticks(T0 - 3600) if start is None else start
    return proc_row(pid, ppid, pgid, sid, start, cmd, user=user, nspid=[pid])


# The host's table: PID 1 forked as the kernel booted, sshd and a shell under it.
HOST_BASE = [
    proc(1, 0, start=12, cmd="/sbin/init"),
    proc(210, 1, start=900, cmd="/usr/sbin/sshd -D"),
    proc(306, 210, cmd="-bash"),
]
# A container's table: its init started long after the machine booted.
CONTAINER_BASE = [
    proc(1, 0, start=ticks(T0 - 7200), cmd="/sbin/init"),
    proc(210, 1, start=ticks(T0 - 7000), cmd="/usr/sbin/sshd -D"),
]


def run(pgid: int = 500, **kw: Any) -> dict[str, Any]:
    return {
        "id": RUN_ID,
        "dir": f"/runs/{RUN_ID}",
        "pid": pgid,
        "pgid": pgid,
        "start_ticks": ticks(T0 - 600),
        "started_at": T0 - 600,
        **kw,
    }


def snap(
    gpus: list[dict[str, Any]],
    procs: list[dict[str, Any]],
    gpu_procs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    run_: dict[str, Any] | None = None,
    t: float = T0,
    logs: list[dict[str, Any]] | None = None,
) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": t,
            "host": "box",
            "boot_time": BOOT,
            "clk_tck": HZ,
            "telemetry": {"source": "nvidia-smi"},
            "gpus": gpus,
            "gpu_procs": list(gpu_procs),
            "procs": procs,
            "run": run_,
            "logs": logs or [],
        }
    )


def holder(pid: int, i: int, used: int = 70_000, name: str = "python3") -> dict[str, Any]:
    return {"pid": pid, "gpu_uuid": f"GPU-{i}", "used_mib": used, "name": name}


def labels(d: Diagnosis) -> dict[int, tuple[str, ...]]:
    return {v.index: v.codes for v in d.gpus}


def owners(d: Diagnosis) -> dict[int, str]:
    return {p.pid: p.owner for v in d.gpus for p in v.processes}


def findings(d: Diagnosis, code: str) -> list[Any]:
    return [f for f in d.findings if f.code == code]


def _gpus() -> list[dict[str, Any]]:
    return [gpu(i, 70_000, 97) if i < 5 else gpu(i) for i in range(8)]


def _holders() -> list[dict[str, Any]]:
    return [holder(4240 + i, i) for i in range(5)]


def after_kill(
    base: list[dict[str, Any]],
    extra: list[dict[str, Any]] = (),
    **run_kw: Any,  # type: ignore[assignment]
) -> Snapshot:
    """A killed run's leftovers: GPUs 0-4 still hold 70 GB at 97 % for PIDs that
    are no longer in the process table."""
    return snap(_gpus(), base, [*_holders(), *extra], run(**run_kw))


# 1. A vanished PID holding memory is a leftover.


def test_vanished_pids_after_a_kill_are_leftovers_never_ok() -> None:
    for run_kw in ({}, {"exit_code": 137, "ended_at": T0 - 30}):  # group gone / SIGKILL
        d = diagnose([after_kill(HOST_BASE, **run_kw)], Topology())
        assert d.run_state == "killed"
        for i in range(5):
            assert labels(d)[i] == ("orphan-process",), (run_kw, i)
            (p,) = d.gpus[i].processes
            assert (p.owner, p.evidence) == ("orphan", "vanished")
        assert d.healthy("target") == (0, 5)
        (f,) = findings(d, "orphan-process")
        assert f.gpus == (0, 1, 2, 3, 4) and f.severity == "warning"  # not tied to our run
        for words in (
            "pid 4242 (python3, 68.4 GiB) on GPU 2",
            "the PIDs no longer exist (they are not in the host's process table)",
            "released within seconds",
            "containers or other PID namespaces",
            "nvidia-smi -r -i N, for N in 0, 1, 2, 3, 4",
            "when nothing runs on it",
        ):
            assert words in f.message, words
        assert "left by" not in f.message and "earlier run" not in f.message
        (topo,) = findings(d, "topology-mismatch")
        assert "target 0/5" in topo.message and topo.severity == "warning"
        # What `dflash-tui status` prints and writes.
        doc = to_json(d, HostConfig())
        assert [g["labels"] for g in doc["gpus"][:5]] == [["orphan-process"]] * 5
        assert {p["owner"] for g in doc["gpus"] for p in g["processes"]} == {"orphan"}
        head = str(render(d, HostConfig())[0])
        assert "healthy target 0/5" in head and "5/5" not in head


def test_one_vanished_pid_names_its_gpu_reset() -> None:
    gpus = [gpu(i, 70_000 if i == 6 else 0, 97 if i == 6 else 0) for i in range(8)]
    d = diagnose([snap(gpus, HOST_BASE, [holder(4242, 6)])], Topology())  # no run at all
    assert labels(d)[6] == ("orphan-process",) and owners(d) == {4242: "orphan"}
    (f,) = findings(d, "orphan-process")
    assert "(nvidia-smi -r -i 6)" in f.message and f.gpus == (6,)
    assert "the PID no longer exists" in f.message
    assert d.healthy("drafter") == (2, 3)  # no run: the idle two wait for one


def test_in_a_container_without_mapping_unseen_pids_stay_unknown_but_not_healthy() -> None:
    pct_exec = proc(400, 0, cmd="python3 - --once")  # entered from the host: parent 0
    mapped = {**holder(9999, 7, 1000), "container_pid": 210}  # the host side mapped one
    cases = {
        "init started after boot": (CONTAINER_BASE, []),
        "a process entered from outside": ([*HOST_BASE, pct_exec], []),
        "host-side mapping in use": (HOST_BASE, [mapped]),
    }
    for why, (base, extra) in cases.items():
        d = diagnose([after_kill(base, extra)], Topology())
        for i in range(5):
            (p,) = d.gpus[i].processes
            assert p.owner == "unknown", (why, i)
            assert "orphan-process" not in labels(d)[i], why
        assert d.healthy("target") == (0, 5), why
        (info,) = findings(d, "processes-not-visible")
        assert info.severity == "info" and set(range(5)) <= set(info.gpus), why
        assert "not counted healthy" in info.message and "4240" in info.message, why
        (topo,) = findings(d, "topology-mismatch")
        assert "target 0/5" in topo.message, why
    # While our run is alive there, those PIDs are most likely its own: healthy.
    live = [*CONTAINER_BASE, proc(500, 1, 500, start=ticks(T0 - 600))]
    d = diagnose([snap(_gpus(), live, _holders(), run())], Topology())
    assert d.run_state == "running" and d.healthy("target") == (5, 5)
    assert set(owners(d).values()) == {"unknown"}
    # No run record at all (a job launched by hand, as in the seed): judged by the labels
    # alone; busy GPUs held by processes we cannot see are not a mismatch.
    d = diagnose([snap(_gpus(), CONTAINER_BASE, _holders(), None)], Topology.parse("0-4:"))
    assert d.run_state == "none" and d.healthy("target") == (5, 5), labels(d)
    assert not findings(d, "topology-mismatch")


def test_a_live_run_guards_unseen_pids_unless_the_drivers_pids_resolve_here() -> None:
    procs = [*HOST_BASE, proc(500, 1, 500, start=ticks(T0 - 600))]
    procs.append(proc(501, 500, 500, start=ticks(T0 - 590)))
    gpus = [gpu(i, 40_000, 97) for i in range(8)]
    # Our live run's process 501 on GPU 0 resolves here: the driver's PIDs are this table's,
    # so 4245 on GPU 5, absent from it, is gone; a leftover even while the run lives.
    d = diagnose([snap(gpus, procs, [holder(501, 0), holder(4245, 5)], run())], Topology())
    assert d.run_state == "running"
    assert owners(d) == {501: "run", 4245: "orphan"}
    assert labels(d)[5] == ("orphan-process",) and labels(d)[0] == ("ok",)
    # Without that proof a live run keeps the benefit of the doubt (unknown).
    d = diagnose([snap(gpus, procs, [holder(4245, 5)], run())], Topology())
    assert owners(d) == {4245: "unknown"} and labels(d)[5] == ("ok",)


def test_live_mode_waits_before_calling_a_vanished_pid_a_leftover() -> None:
    th = Thresholds(persist_s=6.0)
    before = snap(_gpus(), HOST_BASE, [], None, t=T0 - 10)  # quiet, nothing listed
    hist = [before] + [
        snap(_gpus(), HOST_BASE, _holders(), run(exit_code=143, ended_at=T0 - 4), t=T0 + k)
        for k in range(3)
    ]
    d = diagnose(hist, Topology(), th, live=True)
    assert "orphan-process" not in labels(d)[0]  # 2 s: memory is usually back by now
    hist += [
        snap(_gpus(), HOST_BASE, _holders(), run(exit_code=143, ended_at=T0 - 4), t=T0 + k)
        for k in range(3, 9)
    ]
    d = diagnose(hist, Topology(), th, live=True)
    assert labels(d)[0] == ("orphan-process",) and d.gpus[0].labels[0].since == T0
    assert d.healthy("target") == (0, 5)


# 2. Reparented processes are not blamed on our runs.


def test_a_setsid_job_of_another_user_is_not_blamed_on_the_run() -> None:
    procs = [*HOST_BASE, proc(500, 1, 500, start=ticks(T0 - 600))]
    procs.append(proc(501, 500, 500, start=ticks(T0 - 590)))
    sleeper = proc(7001, 1, 7001, start=ticks(T0 - 300), user="alice", cmd="sleep 900")
    gp = [holder(501, 0, 40_000), holder(7001, 5, 500, "sleep")]
    gpus = [gpu(i, 40_000 if i == 0 else 500 if i == 5 else 0) for i in range(8)]
    d = diagnose([snap(gpus, [*procs, sleeper], gp, run())], Topology())
    assert d.run_state == "running"
    assert labels(d)[5] == ("orphan-process",)
    (f,) = findings(d, "orphan-process")
    assert "earlier run" not in f.message and "left by" not in f.message
    for words in (
        "pid 7001 (sleep, 500 MiB; user alice: sleep 900)",
        "reparented to init, not started by this run",
        "nohup/setsid job",
        "check its owner and command before killing it.",
    ):
        assert words in f.message, words
    assert f.severity == "warning" and f.gpus == (5,) and f.action == "kill_process"
    p = d.gpus[5].processes[0]
    assert (p.owner, p.evidence, p.left_by) == ("orphan", "init", "")
    # The same job born before our (now dead) run, or after it ended: still not ours.
    dead = run(exit_code=137, ended_at=T0 - 120)
    for born in (T0 - 900, T0 - 60):
        job = {**sleeper, "start_ticks": ticks(born)}
        d = diagnose([snap(gpus, [*HOST_BASE, job], [gp[1]], dead)], Topology())
        assert d.gpus[5].processes[0].evidence == "init", born
        assert [f.severity for f in findings(d, "orphan-process")] == ["warning"], born


def test_leftovers_tied_to_our_runs_say_which_run_and_are_errors() -> None:
    dead = run(pgid=900, exit_code=137, ended_at=T0 - 60, earlier_runs=[[300, 1000]])
    dead["start_ticks"] = ticks(T0 - 600)
    procs = [
        *HOST_BASE,
        proc(901, 306, 900, 900, start=ticks(T0 - 500)),  # still in the dead run's group
        proc(301, 306, 300, 300, start=1200),  # in the earlier run's group (leader gone)
        proc(777, 1, 777, start=ticks(T0 - 400)),  # setsid worker, born while the run lived
    ]
    gp = [holder(901, 1, 9000), holder(301, 2, 9000), holder(777, 6)]
    gpus = [gpu(i, 9000 if i in (1, 2) else 70_000 if i == 6 else 0) for i in range(8)]
    d = diagnose([snap(gpus, procs, gp, dead)], Topology())
    assert {i: labels(d)[i] for i in (1, 2, 6)} == {i: ("orphan-process",) for i in (1, 2, 6)}
    (f,) = findings(d, "orphan-process")
    assert f.severity == "error" and f.gpus == (1, 2, 6)
    assert f"pid 901 (python3, 8.8 GiB) on GPU 1, left by run {RUN_ID}" in f.message
    assert "left by an earlier run (process group 300)" in f.message
    assert f"pid 777 (python3, 68.4 GiB) on GPU 6, left by run {RUN_ID}" in f.message
    assert "kill it from the process tree before restarting" in f.message
    assert f.action == "kill_process"
    assert "someone's" not in f.message
    ev = {p.pid: (p.evidence, p.left_by) for v in d.gpus for p in v.processes}
    assert ev == {
        901: ("group", f"run {RUN_ID}"),
        301: ("group", "an earlier run (process group 300)"),
        777: ("born-in-run", f"run {RUN_ID}"),
    }


def test_mixed_evidence_gives_an_error_and_a_warning() -> None:
    dead = run(exit_code=137, ended_at=T0 - 60)
    procs = [
        *HOST_BASE,
        proc(777, 1, 777, start=ticks(T0 - 400)),
        proc(7001, 1, 7001, start=ticks(T0 - 9000), user="alice", cmd="nohup python3 x.py"),
    ]
    gp = [holder(777, 6), holder(7001, 6, 2000), holder(4243, 3)]
    gpus = [gpu(i, 72_000 if i == 6 else 70_000 if i == 3 else 0) for i in range(8)]
    d = diagnose([snap(gpus, procs, gp, dead)], Topology())
    got = sorted((f.severity, f.gpus) for f in findings(d, "orphan-process"))
    assert got == [("error", (6,)), ("warning", (3,)), ("warning", (6,))]
    assert d.findings[0].severity == "error"  # errors first


# 3. A diverging run.


def running() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return [*HOST_BASE, proc(500, 1, 500, start=ticks(T0 - 600))], run()


def test_non_finite_loss_in_the_latest_step_is_an_error() -> None:
    procs, r = running()
    for loss, shown in ((float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf")):
        prog = Progress(120, T0 - 2, 2.0, Metric(step=120, loss=loss, acc=0.1, tok_s=2810.0))
        d = diagnose([snap([gpu(0)], procs, [], r)], Topology.parse("0:"), progress=prog)
        (f,) = findings(d, "loss-not-finite")
        assert f.severity == "error", loss
        assert f.message.startswith(f"loss is {shown} at step 120: training diverged"), f.message
        assert "still burning GPU time" in f.message
        assert "Next: kill it, then" in f.message and "--resume auto" in f.message
        assert f.action == "kill"
    # A stalled diverged run gets both findings.
    prog = Progress(40, T0 - 300, 2.0, Metric(step=40, loss=float("nan")))
    d = diagnose([snap([gpu(0)], procs, [], r)], Topology.parse("0:"), progress=prog)
    assert {"loss-not-finite", "no-progress"} <= {f.code for f in d.findings}
    # Finite, missing, or no longer running: nothing to say about the loss.
    nan = Metric(step=120, loss=float("nan"))
    for prog, pp, rr in (
        (Progress(120, T0 - 2, 2.0, Metric(step=120, loss=2.31)), procs, r),
        (Progress(120, T0 - 2, 2.0, Metric(step=120, tok_s=10.0)), procs, r),
        (Progress(120, T0 - 2, 2.0, nan), HOST_BASE, run(exit_code=1, ended_at=T0 - 1)),
    ):
        d = diagnose([snap([gpu(0)], pp, [], rr)], Topology.parse("0:"), progress=prog)
        assert not findings(d, "loss-not-finite"), d.run_state


# Messages: no trailing or doubled spaces, whatever the case.


def test_messages_have_no_stray_spaces() -> None:
    procs, r = running()
    cases = [
        snap([gpu(0)], HOST_BASE, [], run(exit_code=0, ended_at=T0 - 5)),  # "success)."
        snap([gpu(0)], HOST_BASE, [], run(exit_code=143, kill_requested_at=T0 - 9)),
        snap([gpu(0)], HOST_BASE, [], run(exit_code=3, ended_at=T0 - 5)),
        after_kill(HOST_BASE),
        after_kill(CONTAINER_BASE),
        snap([gpu(i, 0, 100 if i == 2 else 0) for i in range(8)], procs, [], r),
    ]
    prog = Progress(120, T0 - 200, 2.0, Metric(step=120, loss=float("nan")))
    for s in cases:
        d = diagnose([s], Topology(), progress=prog)
        assert d.findings
        for f in d.findings:
            assert f.message == f.message.strip() and "  " not in f.message, f


# Findings reach the command line and --read-only too: their words name no key to press; the
# action a front end with keys may name (tui/app/host/findings/panel.py) is carried beside them.

KEY_WORDS = re.compile(r"\((?:[lkrKA])\)|press [a-zA-Z]\b|with [lkr]\b")


def test_messages_name_no_app_key_and_the_action_carries_it() -> None:
    procs, r = running()
    orphans = [*HOST_BASE, proc(777, 1, 777, start=ticks(T0 - 400))]
    absent = [{"path": "/w/x.log", "exists": False}]
    cases = [
        (
            snap([gpu(i) for i in range(8)], HOST_BASE, [], None, logs=absent),
            {"idle": "launch", "log-missing": "launch"},
        ),
        (
            snap([gpu(0)], HOST_BASE, [], run(exit_code=3, ended_at=T0 - 5)),
            {"run-exited": "restart"},
        ),
        (
            snap([gpu(6, 70_000)], orphans, [holder(777, 6)], run(exit_code=137, ended_at=T0 - 60)),
            {"orphan-process": "kill_process"},
        ),
        (snap([gpu(0)], procs, [], r), {"no-progress": "restart", "loss-not-finite": "kill"}),
    ]
    prog = Progress(120, T0 - 200, 2.0, Metric(step=120, loss=float("nan")))
    for s, actions in cases:
        d = diagnose([s], Topology(), progress=prog)
        got = {f.code: f.action for f in d.findings}
        assert {c: got.get(c) for c in actions} == actions, got
        for f in d.findings:
            assert not KEY_WORDS.search(f.message), f


# The seed incident on a host-view snapshot, with and without a run record: the seed's labels,
# no leftover or hidden-process finding.


def test_seed_incident_unchanged() -> None:
    seed = [(0, 0, 0), (1, 0, 0), (2, 0, 100), (3, 0, 100), (4, 0, 0), (5, 0, 0), (6, 0, 0)]
    seed.append((7, 0, 100))
    gpus = [gpu(i, used, util) for i, used, util in seed]
    for r in (None, run()):
        d = diagnose([snap(gpus, HOST_BASE, [], r)], Topology())
        assert labels(d) == {
            0: ("idle",),
            1: ("idle",),
            2: ("busy-no-memory",),
            3: ("busy-no-memory",),
            4: ("idle",),
            5: ("idle",),
            6: ("idle",),
            7: ("busy-no-memory",),
        }
        # No run is alive (the recorded one's group is gone): an idle GPU waits for one.
        assert d.run_state not in ("starting", "running")
        assert d.healthy("target") == (3, 5) and d.healthy("drafter") == (2, 3)
        assert not findings(d, "orphan-process") and not findings(d, "processes-not-visible")
        (f,) = findings(d, "busy-no-memory")
        assert f.gpus == (2, 3, 7)
