"""The supervisor's record as readers judge it (fresh, stale, stopped), the supervisor-stale
finding, the status document's ``supervisor`` and ``progress``, and the policy's resume."""

from __future__ import annotations

import math
from typing import Any

from dflash_train.topology import Topology
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import RunRecord, Snapshot
from dflash_tui.core.base.supervision import SupervisorRecord, policy_request
from dflash_tui.core.base.timings import RestartPolicy
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.control.supervisor_state import kept_from
from dflash_tui.core.diagnosis.document import to_json
from dflash_tui.core.diagnosis.tracker import Tracker

NOW = 1_800_000_000.0


def rec(**kw: Any) -> dict[str, Any]:
    return {"pid": 42, "host": "bastion", "heartbeat_at": NOW - 1, "heartbeat_s": 2.0,
            "started_at": NOW - 100, "mode": "daemon", "restarts": 2,
            "policy": {"enabled": True}, **kw}  # fmt: skip


def test_fresh_stale_stopped_and_once() -> None:
    fresh = SupervisorRecord.from_dict(rec())
    assert fresh is not None and fresh.live(NOW) and not fresh.stale(NOW) and fresh.auto is True
    old = SupervisorRecord.from_dict(rec(heartbeat_at=NOW - 11))
    assert old is not None and not old.live(NOW) and old.stale(NOW)  # max(3 x 2 s, 10 s)
    slow = SupervisorRecord.from_dict(rec(heartbeat_at=NOW - 11, heartbeat_s=5.0))
    assert slow is not None and slow.live(NOW)  # 3 beats of 5 s
    stopped = SupervisorRecord.from_dict(rec(heartbeat_at=NOW - 500, stopped_at=NOW - 500))
    assert stopped is not None and not stopped.live(NOW) and not stopped.stale(NOW)
    cron = SupervisorRecord.from_dict(rec(heartbeat_at=NOW - 500, mode="once"))
    assert cron is not None and not cron.live(NOW) and not cron.stale(NOW)
    assert SupervisorRecord.from_dict([1]) is None
    odd = SupervisorRecord.from_dict({"pid": "x", "heartbeat_at": True, "restarts": 1.5})
    assert odd is not None and odd.pid is None and odd.age(NOW) is None and not odd.live(NOW)
    assert policy_request({"enabled": False}) is False and policy_request({"enabled": 1}) is None


def snapshot(supervisor: dict[str, Any] | None, **extra: Any) -> Snapshot:
    return Snapshot.from_dict({"time": NOW, "supervisor": supervisor, **extra})


def test_a_stale_heartbeat_is_a_finding_with_how_long() -> None:
    diag = Tracker(Topology(), live=False).add(snapshot(rec(heartbeat_at=NOW - 185)))
    (f,) = [f for f in diag.findings if f.code == "supervisor-stale"]
    assert f.severity == "warning" and "PID 42 on bastion" in f.message
    assert "last heartbeat 3m05s ago" in f.message
    for ok in (rec(), rec(heartbeat_at=NOW - 185, stopped_at=NOW - 185), None):
        diag = Tracker(Topology(), live=False).add(snapshot(ok))
        assert "supervisor-stale" not in [f.code for f in diag.findings]


def test_status_document_supervisor_and_progress() -> None:
    step = {"time": NOW - 4, "step": 120, "loss": 2.31, "acc": 0.4, "tok_s": 2810.0}
    t = Tracker(Topology(), live=False)
    doc = to_json(t.add(snapshot(rec(), last_step=step)), HostConfig(), t.progress)
    assert doc["supervisor"]["pid"] == 42 and doc["supervisor"]["fresh"] is True
    assert doc["supervisor"]["heartbeat_age_s"] == 1.0 and doc["supervisor"]["restarts"] == 2
    assert doc["progress"] == {"source": "events", "step": 120, "loss": 2.31, "loss_finite": True,
                               "acc": 0.4, "tok_s": 2810.0, "last_step_at": "2027-01-15T07:59:56Z",
                               "last_step_age_s": 4.0}  # fmt: skip
    nan = to_json(t.add(snapshot(None, last_step={**step, "loss": math.nan})), HostConfig())
    assert nan["supervisor"] is None and nan["progress"]["loss"] is None
    assert nan["progress"]["loss_finite"] is False
    # No event stream: from the run's log, dated by the log's mtime.
    log = {"path": "/r/output.log", "exists": True, "is_run_log": True, "mtime": NOW - 7,
           "lines": ["step=5 loss=3.5 acc=0.1 tok/s=900"]}  # fmt: skip
    t2 = Tracker(Topology(), live=False)
    d2 = t2.add(snapshot(None, logs=[log]))
    got = to_json(d2, HostConfig(), t2.progress, NOW - 7)["progress"]
    assert got["source"] == "log" and got["step"] == 5 and got["tok_s"] == 900.0
    assert got["last_step_age_s"] == 7.0
    assert (
        to_json(Tracker(Topology(), live=False).add(snapshot(None)), HostConfig())["progress"]
        is None
    )


POLICY = RestartPolicy(enabled=True, retries=3, backoff_s=2, max_backoff_s=5, stable_s=60)


def run(rid: str, code: int | None, started: float, ended: float | None) -> RunRecord:
    return RunRecord(id=rid, dir=f"/r/{rid}", pgid=1, started_at=started, exit_code=code,
                     ended_at=ended)  # fmt: skip


def test_resume_carries_out_a_scheduled_restart_and_keeps_the_count() -> None:
    pending = Decision("restart", "run a exited; restart 2/3 in 4 s", 104.0, 2)
    m = AutoRestart(POLICY)
    m.resume(failures=2, restart_times=[50.0], pending=("a", pending))
    # The run ended before this machine started, yet the restart was scheduled while supervised.
    assert m.observe(run("a", 1, 0, 100), "exited", 102) == pending
    m.restarted(104)
    assert m.failures == 2 and m.restarts == [50.0, 104]
    again = m.observe(run("b", 1, 104, 110), "exited", 110)
    assert again.action == "restart" and again.failures == 3


def test_an_old_crash_is_left_but_a_killed_run_seen_alive_is_restarted() -> None:
    m = AutoRestart(POLICY)
    assert m.observe(run("a", 1, 0, 50), "exited", 100).message.endswith("left as is")
    m = AutoRestart(POLICY)
    assert m.observe(run("b", None, 90, None), "running", 100).action == "watch"
    assert m.observe(run("b", None, 90, None), "killed", 105).action == "restart"  # SIGKILL
    m = AutoRestart(POLICY)  # a killed run never seen alive: when it ended is unknown
    assert m.observe(run("c", None, 90, None), "killed", 105).action == "watch"


def test_kept_from_a_record() -> None:
    k = kept_from(rec(failures=1, restart_times=[1.0, "x"], launching="r2", seen_alive="r2",
                      pending={"run_id": "r1", "action": "restart", "message": "m", "at": 9.0,
                               "failures": 1}), "daemon")  # fmt: skip
    assert k.restarts == 2 and k.failures == 1 and k.restart_times == [1.0]
    assert k.pending == ("r1", Decision("restart", "m", 9.0, 1)) and k.launching == "r2"
    assert k.since is None
    once = kept_from(rec(mode="once"), "once")
    assert once.since == NOW - 1  # a cron chain of --once runs is one supervision
    assert kept_from(None, "daemon").restarts == 0


def test_the_probe_reads_the_record_and_the_last_step_event(tmp_path: Any) -> None:
    from dflash_tui.core.probe import files

    errors: list[str] = []
    assert files.read_supervisor(str(tmp_path), errors) is None and errors == []
    (tmp_path / "supervisor.json").write_text('{"pid": 7, "heartbeat_at": 1.5}\n')
    assert files.read_supervisor(str(tmp_path), errors) == {"pid": 7, "heartbeat_at": 1.5}
    (tmp_path / "supervisor.json").write_text("{half")
    assert files.read_supervisor(str(tmp_path), errors) is None and "is not JSON" in errors[-1]
    ev = tmp_path / "events.jsonl"
    ev.write_text(
        '{"event":"step","time":1.0,"step":1,"loss":3.0,"tok_s":10.0}\n'
        '{"event":"step","time":2.0,"step":2,"loss":NaN,"acc":0.5,"tok_s":20.0}\n'
        '{"event":"checkpoint","time":3.0,"step":2}\n{"event":"st'
    )
    got = files.last_step({"events_path": str(ev)}, errors)
    assert got is not None and got["step"] == 2 and math.isnan(got["loss"]) and got["acc"] == 0.5
    assert files.last_step({"events_path": str(tmp_path / "none")}, errors) is None


def test_fatal_history_and_write_error_are_read_tolerantly_and_said_once() -> None:
    """The record's account: FATAL with when, after how many restarts and the last exit; a
    hostile or malformed field is dropped or made one safe line, never a crash."""
    doc = {
        "pid": 7, "restarts": 3, "heartbeat_at": NOW, "policy": {"enabled": True, "retries": 3},
        "fatal": {"at": 1_800_000_003.0, "restarts": 3, "run_id": "r3",
                  "last_exit": "run r3 exited (exit 1: error)\x1b]0;pwned\x07"},
        "history": [{"time": NOW, "kind": "restart", "text": "restarted run r1 as run r2"},
                    {"time": "soon", "kind": "restart", "text": "x"}, "junk", None,
                    {"time": NOW + 1, "kind": "fatal", "text": "FATAL: gave up"}],
        "write_error": "No space left on device",
    }  # fmt: skip
    rec = SupervisorRecord.from_dict(doc)
    assert rec is not None and rec.fatal is not None
    assert [e.kind for e in rec.history] == ["restart", "fatal"]
    said = rec.summary()
    assert said.startswith("FATAL: gave up after 3 restarts at 08:00:03Z (run r3 exited (exit 1")
    assert "\x1b" not in said and "\x07" not in said
    assert said.endswith("; cannot write its files: No space left on device")
    assert rec.to_status(NOW)["state"] == "fatal"
    calm = SupervisorRecord.from_dict({**doc, "fatal": None, "write_error": None})
    assert calm is not None and calm.summary() == "3 restarts, auto-restart on (3 retries)"
    assert SupervisorRecord.from_dict({"fatal": "yes", "history": {"a": 1}}) is not None
