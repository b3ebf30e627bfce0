"""``dflash-tui supervise`` with real processes under a temporary run root, no app: a crash
loop restarted with backoff up to FATAL with rate-limited alerts (a local HTTP receiver and a
command hook); one supervisor per run root; SIGKILL mid-backoff and re-attach; notifiers that
fail or hang; ``status --json`` with ``supervisor`` and ``progress`` for the tiny pipeline."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from receiver import Receiver
from supervise_util import (
    alive,
    cleanup,
    cli,
    config,
    hook,
    hook_alerts,
    numbers,
    record,
    run_dirs,
    sigkill_supervisor,
    wait_for,
)

pytestmark = pytest.mark.slow
FAST = ("--interval", "0.5", "--start-window", "1")
CRASH5 = 'echo "step=1 loss=2.5 tok/s=100"; sleep 5; echo "Traceback: boom at step 1" >&2; exit 3'


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def supervise(root: Path, cfg: Path, *extra: str, command: str = "") -> None:
    """``supervise``; ``command`` is what a restart launches (empty: the tiny pipeline)."""
    cmd = ("--command", command) if command else ()
    res = cli("supervise", "--config", str(cfg), "--run-root", str(root), *FAST, *cmd, *extra)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"supervisor PID {record(root)['pid']} supervises"), res.stdout


def launch(root: Path, command: str) -> dict:
    res = cli("launch", "--json", "--run-root", str(root), "--command", command, *FAST[2:])
    out = json.loads(res.stdout)
    assert out["ok"], out
    return out


def decision(root: Path) -> str:
    return (record(root).get("last_decision") or {}).get("action", "")


def test_crash_loop_backoff_fatal_and_one_alert_per_rate_limit(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "hook"
    with Receiver() as rx:
        cfg = config(
            tmp_path / "cfg.toml",
            "retries = 2\nbackoff_s = 1.0",
            {"command": hook(out), "webhook": rx.url, "on": ["run-exited", "restart", "fatal"],
             "min_interval_s": 60, "log_lines": 5},
        )  # fmt: skip
        supervise(root, cfg, "--auto-restart", "--detach", command=CRASH5)
        launch(root, CRASH5)
        wait_for(lambda: decision(root) == "fatal", 90, "FATAL")
        time.sleep(3)  # nothing after FATAL but the FATAL alert
        dirs = run_dirs(root)
        assert len(dirs) == 3  # retries + 1
        ends = [numbers(d / "exit") for d in dirs]
        starts = [numbers(d / "started_at")[0] for d in dirs]
        assert all(code == 3 for code, _ in ends)
        assert starts[1] - ends[0][1] >= 1.0 and starts[2] - ends[1][1] >= 2.0  # doubling backoff
        assert rx.codes() == ["run-exited", "restart", "fatal"]
        bodies = rx.bodies
    for body in bodies:  # Slack's "text", ntfy's title/message, the alert with the log tail
        assert "boom at step 1" in body["text"] and body["title"].startswith("dflash ")
        assert "Traceback: boom at step 1" in body["alert"]["log_tail"]
    fatal = bodies[-1]["alert"]
    assert (
        fatal["held"] == {"restart": 1, "run-exited": 2} and "gave up after 2" in fatal["message"]
    )
    assert bodies[0]["alert"]["run_id"] == dirs[0].name
    hooked = hook_alerts(out)
    assert [a["code"] for a in hooked] == ["run-exited", "restart", "fatal"]
    assert Path(f"{out}.codes").read_text().split() == ["run-exited", "restart", "fatal"]
    rec = record(root)
    assert rec["restarts"] == 2 and rec["fatal_run"] == dirs[-1].name and rec["alerts_sent"] == 6
    log = (root / "supervisor.log").read_text()
    assert log.count("alert restart not sent (rate limit)") == 1
    assert "gave up after 2 restarts" in log


def test_a_second_supervisor_is_refused_naming_the_first(root: Path, tmp_path: Path) -> None:
    cfg = config(tmp_path / "cfg.toml")
    supervise(root, cfg, "--detach")
    first = record(root)
    for extra in ((), ("--detach",), ("--once",)):
        res = cli("supervise", "--config", str(cfg), "--run-root", str(root), *FAST, *extra)
        assert res.returncode == 3, (extra, res.stderr)
        assert f"PID {first['pid']} on {first['host']} since " in res.stderr
        assert "already runs" in res.stderr
    assert record(root)["pid"] == first["pid"] and alive(first["pid"], first["start_ticks"])
    stop = cli("supervise", "--stop", "--run-root", str(root))
    assert stop.returncode == 0 and f"PID {first['pid']}" in stop.stdout, stop.stderr
    assert not alive(first["pid"], first["start_ticks"])
    assert (
        record(root)["stop_reason"] == "signal SIGTERM" and not (root / ".supervisor.lock").exists()
    )
    again = cli("supervise", "--once", "--config", str(cfg), "--run-root", str(root), *FAST)
    assert again.returncode == 0, again.stderr  # the lock was released


def test_sigkill_mid_backoff_keeps_the_count_and_doubles_no_run(root: Path, tmp_path: Path) -> None:
    mark, crash = tmp_path / "second", tmp_path / "crash"
    job = (f"if [ -e {mark} ]; then echo second run; exec sleep 300; fi; touch {mark}; "
           f"while [ ! -e {crash} ]; do sleep 0.1; done; echo crashing; exit 1")  # fmt: skip
    cfg = config(tmp_path / "cfg.toml", "retries = 3\nbackoff_s = 6.0")
    supervise(root, cfg, "--auto-restart", "--detach", command=job)
    first = launch(root, job)
    wait_for(lambda: record(root).get("seen_alive") == first["run_id"], 20, "the run seen alive")
    sigkill_supervisor(root)  # the job is alive: it must be untouched
    assert alive(first["pid"])
    supervise(root, cfg, "--auto-restart", "--detach", command=job)  # re-attaches
    assert alive(first["pid"]) and len(run_dirs(root)) == 1 and record(root)["restarts"] == 0
    crash.touch()
    wait_for(lambda: (record(root).get("pending") or {}).get("run_id") == first["run_id"], 20,
             "a restart scheduled")  # fmt: skip
    sigkill_supervisor(root)  # mid-backoff
    kept = record(root)
    assert kept["failures"] == 1 and kept["pending"]["at"] > time.time()
    supervise(root, cfg, "--auto-restart", "--detach", command=job)
    wait_for(lambda: len(run_dirs(root)) == 2, 30, "the scheduled restart")
    wait_for(lambda: record(root).get("restarts") == 1, 10, "the restart counted")
    time.sleep(2)
    dirs = run_dirs(root)
    assert len(dirs) == 2  # exactly one relaunch for one crash
    ended = numbers(dirs[0] / "exit")[1]
    assert numbers(dirs[1] / "started_at")[0] >= ended + 6.0  # the backoff held across
    rec = record(root)
    assert rec["restarts"] == 1 and rec["failures"] == 1 and rec["run"]["id"] == dirs[1].name
    log = (root / "supervisor.log").read_text()
    assert log.count("supervising ") == 3 and "taking over the lock" in log
    assert f"a restart of run {first['run_id']} due" in log


WEBHOOK_500 = ["via webhook failed: HTTP 500", "via command failed: timed out after 1s"]
WEBHOOK_HANGS = ["via webhook failed: timed out after 1s", "via command failed: exit 7: nope"]


@pytest.mark.parametrize(
    ("mode", "command", "says"),
    [("500", "sleep 30", WEBHOOK_500), ("hang", "echo nope >&2; exit 7", WEBHOOK_HANGS)],
)
def test_failing_or_hung_notifiers_never_stop_supervision(
    root: Path, tmp_path: Path, mode: str, command: str, says: list[str]
) -> None:
    with Receiver(mode) as rx:
        cfg = config(
            tmp_path / "cfg.toml",
            "retries = 1\nbackoff_s = 0.5",
            {"command": command, "webhook": rx.url, "on": ["restart", "fatal"], "timeout_s": 1},
        )
        crash = "echo up; sleep 1.5; exit 2"
        supervise(root, cfg, "--auto-restart", "--detach", command=crash)
        t0 = time.time()
        launch(root, crash)
        wait_for(lambda: decision(root) == "fatal", 40, "FATAL despite the notifiers")
        assert len(run_dirs(root)) == 2 and time.time() - t0 < 25
        wait_for(lambda: record(root).get("alerts_failed", 0) >= 4, 15, "both alerts failed twice")
        beat = record(root)["heartbeat_at"]
        wait_for(lambda: record(root)["heartbeat_at"] > beat, 5, "still beating")
        assert rx.codes() == ["restart", "fatal"]
    log = (root / "supervisor.log").read_text()
    for text in says:
        assert text in log


def test_status_json_shows_supervisor_and_progress_of_the_tiny_pipeline(
    root: Path, tmp_path: Path
) -> None:
    cfg = config(tmp_path / "cfg.toml")
    supervise(root, cfg, "--auto-restart", "--detach")
    launch(root, "")  # empty: the default command, the tiny pipeline on the CPU

    def progress() -> dict | None:
        res = cli("status", "--json", "--run-root", str(root))
        doc = json.loads(res.stdout)
        return doc if (doc.get("progress") or {}).get("step") else None

    doc = wait_for(progress, 240, "a step of the tiny pipeline")
    sup, prog = doc["supervisor"], doc["progress"]
    rec = record(root)
    assert sup["pid"] == rec["pid"] and sup["fresh"] is True and sup["stale"] is False
    assert sup["heartbeat_age_s"] < 5 and sup["policy"]["enabled"] is True
    assert prog["source"] == "events" and prog["step"] >= 1 and prog["loss_finite"]
    assert prog["loss"] > 0 and prog["tok_s"] > 0 and 0 <= prog["last_step_age_s"] < 60
    assert "supervisor-stale" not in [f["code"] for f in doc["findings"]]
    table = cli("status", "--run-root", str(root)).stdout  # the readable table says it too
    assert f"supervisor: PID {rec['pid']} on {rec['host']} since " in table
    assert ", fresh (heartbeat " in table and "0 restarts, auto-restart on" in table
    sigkill_supervisor(root)  # now nothing beats: after max(3 beats, 10 s) it is stale
    time.sleep(11)
    doc = json.loads(cli("status", "--json", "--run-root", str(root)).stdout)
    assert doc["supervisor"]["fresh"] is False and doc["supervisor"]["stale"] is True
    stale = [f for f in doc["findings"] if f["code"] == "supervisor-stale"]
    assert len(stale) == 1 and f"PID {rec['pid']}" in stale[0]["message"]
    assert "last heartbeat 1" in stale[0]["message"]  # 10s or more ago
    assert doc["run"]["state"] == "running"  # the job never depended on it
    table = " ".join(cli("status", "--run-root", str(root)).stdout.split())
    assert ", STALE (heartbeat 1" in table and "0 restarts, auto-restart on" in table


def test_once_chain_restarts_a_crash_between_two_runs_but_not_an_old_one(
    root: Path, tmp_path: Path
) -> None:
    cfg = config(tmp_path / "cfg.toml", "retries = 2\nbackoff_s = 0")
    crash = tmp_path / "crash"
    job = f"while [ ! -e {crash} ]; do sleep 0.1; done; exit 1"
    once = ("supervise", "--once", "--auto-restart", "--config", str(cfg), "--run-root",
            str(root), "--command", job, *FAST)  # fmt: skip
    old = tmp_path / "old"
    launch(old, job)
    crash.touch()
    wait_for(lambda: (run_dirs(old)[0] / "exit").exists(), 20, "the old run ended")
    res = cli(*once[: -len(FAST) - 4], "--run-root", str(old), "--command", job, *FAST)
    assert res.returncode == 0 and "left as is" in res.stdout, res.stdout + res.stderr
    assert len(run_dirs(old)) == 1  # it ended before any supervisor: left as is
    crash.unlink()
    launch(root, job)
    assert cli(*once).returncode == 0 and record(root)["seen_alive"] == run_dirs(root)[0].name
    crash.touch()
    wait_for(lambda: (run_dirs(root)[0] / "exit").exists(), 20, "the run crashed")
    res = cli(*once)  # the next cron tick: the crash happened while the chain supervised
    assert res.returncode == 0 and "restarted as run" in res.stdout, res.stdout + res.stderr
    assert len(run_dirs(root)) == 2 and record(root)["restarts"] == 1
    assert record(root)["mode"] == "once" and not (root / ".supervisor.lock").exists()
    cleanup(old)
