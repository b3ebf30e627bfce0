"""The pure run-directory rules: state, group membership (PGID reuse), control.sh's report."""

from __future__ import annotations

from dflash_tui.core.base.rundir import exit_meaning, group_members, parse_report, run_state
from dflash_tui.core.base.snapshot import Proc, RunRecord


def proc(pid: int, pgid: int, sid: int | None = None, ticks: int = 100, state: str = "S") -> Proc:
    return Proc(pid, 1, pgid, sid if sid is not None else pgid, state, ticks, None, None, "", "x")


RUN = RunRecord(id="r", dir="/runs/r", pid=50, pgid=50, start_ticks=100, started_at=1000.0)


def test_leader_with_the_recorded_start_time_owns_the_group() -> None:
    procs = [proc(50, 50), proc(51, 50, ticks=101), proc(60, 60)]
    assert [p.pid for p in group_members(RUN, procs)] == [50, 51]


def test_reused_pgid_leader_with_another_start_time_owns_nothing() -> None:
    assert group_members(RUN, [proc(50, 50, ticks=999), proc(51, 50, ticks=1000)]) == []


def test_leaderless_members_must_be_in_the_run_session_and_younger() -> None:
    assert [p.pid for p in group_members(RUN, [proc(51, 50, ticks=120)])] == [51]
    # Another session with that PGID, or a member older than our leader: not ours.
    assert group_members(RUN, [proc(51, 50, sid=7, ticks=120)]) == []
    assert group_members(RUN, [proc(51, 50, ticks=90)]) == []


def test_zombies_are_not_members() -> None:
    assert group_members(RUN, [proc(50, 50, state="Z")]) == []


def test_states() -> None:
    alive = [proc(50, 50)]
    assert run_state(None, [], 0) == "none"
    assert run_state(RUN, alive, 1001.0) == "starting"
    assert run_state(RUN, alive, 1010.0) == "running"
    assert run_state(RUN, [], 1010.0) == "killed"  # vanished without an exit code
    ended = RunRecord(**{**RUN.__dict__, "exit_code": 3, "ended_at": 1010.0})
    assert run_state(ended, [], 1011.0) == "exited"
    quick = RunRecord(**{**RUN.__dict__, "exit_code": 3, "ended_at": 1000.5})
    assert run_state(quick, [], 1011.0) == "launch-failed"
    quick_ok = RunRecord(**{**RUN.__dict__, "exit_code": 0, "ended_at": 1000.5})
    assert run_state(quick_ok, [], 1011.0) == "exited"
    asked = RunRecord(**{**quick.__dict__, "exit_code": 143, "kill_requested_at": 1000.2})
    assert run_state(asked, [], 1011.0) == "killed"
    signalled = RunRecord(**{**ended.__dict__, "exit_code": 137})
    assert run_state(signalled, [], 1011.0) == "killed"
    failed = RunRecord(id="r", dir="/r", launch_error="sh: 1: x: not found")
    assert run_state(failed, [], 0) == "launch-failed"
    # No pid file yet: the launcher is still at it. A start time written (it comes after the
    # pid file) with no readable pid: a broken record, not "starting" for ever.
    assert run_state(RunRecord(id="r", dir="/r"), [], 10**9) == "starting"
    garbage_pid = RunRecord(id="r", dir="/r", started_at=0.0)
    assert run_state(garbage_pid, [], 10**9) == "launch-failed"


def test_exit_meaning() -> None:
    assert "OOM" in exit_meaning(137)
    assert "SIGTERM" in exit_meaning(143)
    assert exit_meaning(127) == "command not found"
    assert "vanished" in exit_meaning(None)


REPORT = """launched 20261202-090000-0a0b
pruned 20261201-090000-0001
now 1764666000.5
id 20261202-090000-0a0b
dir /runs/20261202-090000-0a0b
file pid 4242 4242 777
file started_at 1764666000.25
file exit 143 1764666009.75
file kill_requested 1764666009.5
file command python3 train.py --name "a b" ; echo $(x)
launch_error line one
launch_error line two
verdict ours
member 4242 1 4242 4242 S 777 sh
member 4250 4242 4242 4242 D 780 python3 (worker) x
member garbage
log step=1 loss=2.0
signalled TERM 4242
something unknown
"""


def test_parse_report_reads_every_fact() -> None:
    rep = parse_report(REPORT)
    rec = rep.record
    assert rec is not None and rec.id == "20261202-090000-0a0b"
    assert (rec.pid, rec.pgid, rec.start_ticks) == (4242, 4242, 777)
    assert rec.started_at == 1764666000.25 and rec.kill_requested_at == 1764666009.5
    assert (rec.exit_code, rec.ended_at) == (143, 1764666009.75)
    assert rec.command == 'python3 train.py --name "a b" ; echo $(x)'
    assert rec.launch_error == "line one\nline two"
    assert rec.log_path == "/runs/20261202-090000-0a0b/output.log"
    assert rep.now == 1764666000.5 and rep.verdict == "ours"
    assert [(m.pid, m.state, m.cmd) for m in rep.members] == [
        (4242, "S", "sh"),
        (4250, "D", "python3 (worker) x"),
    ]
    assert rep.log_tail == ("step=1 loss=2.0",)
    assert rep.launched == "20261202-090000-0a0b" and rep.pruned == ("20261201-090000-0001",)
    assert rep.signalled == ("TERM",)


def test_parse_report_without_a_run_and_with_errors() -> None:
    rep = parse_report("now 5\nnone\n")
    assert rep.record is None and rep.state() == "none"
    rep = parse_report("error another launch holds the lock /r/.lock (owner: 1 2)\n")
    assert rep.errors == ("another launch holds the lock /r/.lock (owner: 1 2)",)
    assert parse_report("file pid x y z\ndir /r/a\n").record.pgid is None  # type: ignore[union-attr]


def test_an_exit_record_parses_each_part_and_malformed_parts_are_unknown() -> None:
    from dflash_tui.core.base.rundir import parse_exit

    assert parse_exit("3 1700000000.5\n") == (3, 1700000000.5)
    assert parse_exit("0") == (0, None)
    assert parse_exit(None) == (None, None)
    assert parse_exit("") == (None, None)
    assert parse_exit("x 12") == (None, 12.0)
    assert parse_exit("\u00b2 nan") == (None, None)  # "²" is a digit to str.isdigit, not to int
    assert parse_exit("7 inf") == (7, None)
    assert parse_exit("-1 oops") == (None, None)
