"""No raw escape sequence from a job, a GPU driver tool or a remote side reaches the terminal
through the command line.

Each path is driven for real with a payload of OSC 52 (write the clipboard), OSC 0 (set the
title), OSC 8 (a hyperlink), CSI 21t (report the title back), a DCS string and a NUL, and the
real ``dflash-tui`` command's stdout and stderr are checked byte for byte: not one ESC or NUL
byte may come through (our own output has none), while the payload's text stays visible.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.scenario import FakeSmi, app, box
from sshd_fixtures import ALIAS, local_view, make_sshd

ROOT = Path(__file__).resolve().parents[2]
# The payload as printf(1) writes it (octal escapes), and the words that must stay visible.
PRINTF = (
    r"\033]52;c;UFdORUQ=\007\033]0;PWNED-TITLE\007\033]8;;http://evil.example/\007link"
    r"\033]8;;\007\033[21t\033P+q50574e\033\\\000after-nul"
)
PAYLOAD = (
    "\x1b]52;c;UFdORUQ=\x07\x1b]0;PWNED-TITLE\x07\x1b]8;;http://evil.example/\x07link"
    "\x1b]8;;\x07\x1b[21t\x1bP+q50574e\x1b\\"
)  # (no NUL: it cannot travel in argv or a process name)
MARK = b"PWNED"


def dflash(*args: str, env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """The real command, its output captured as bytes."""
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    return res.returncode, res.stdout, res.stderr


def raw_bytes(out: bytes) -> list[str]:
    """The terminal-control bytes in ``out``: each ESC or NUL with what follows it."""
    return [repr(out[i : i + 8]) for i, b in enumerate(out) if b in (0x1B, 0x00)]


def assert_safe(out: bytes, err: bytes) -> None:
    assert MARK in out + err, (out + err)[-2000:]  # the path was taken and is still readable
    assert raw_bytes(out) == [] and raw_bytes(err) == []


def sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def test_launch_prints_a_failed_jobs_log_lines_safely(tmp_path: Path) -> None:
    line = sh_quote(PRINTF + "\\n")
    job = f"printf {line}; printf 'second line\\n'; exit 3"
    rc, out, err = dflash("launch", "--run-root", str(tmp_path), "--command", job)
    assert rc == 1 and b"last lines of the log" in out
    assert_safe(out, err)


def test_launch_quotes_a_launch_error_file_safely(tmp_path: Path) -> None:
    """The job itself writes launch_error (it knows its run directory), then fails."""
    job = f'printf {sh_quote(PRINTF)} >"$DFLASH_RUN_DIR/launch_error"; exit 1'
    rc, out, err = dflash("launch", "--run-root", str(tmp_path), "--command", job)
    assert rc == 1 and b"launch-failed" in out
    assert_safe(out, err)


# It names itself (comm, 15 bytes at most) with the payload's OSC 0, then ignores SIGTERM.
STUBBORN = (
    "import signal, time; open('/proc/self/comm', 'w').write('\\x1b]0;PWNED\\x07'); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
)


def test_kill_progress_names_processes_safely(tmp_path: Path) -> None:
    """The job's process name (which it sets) and argv carry the payload; it ignores SIGTERM,
    so kill's progress lines list it while waiting for the grace to end."""
    job = f'exec python3 -c {sh_quote(STUBBORN)} "$(printf {sh_quote(PRINTF)})"'
    rc, out, err = dflash(
        "launch", "--json", "--run-root", str(tmp_path), "--command", job, "--start-window", "1"
    )
    run = json.loads(out)
    assert run["ok"], out + err
    try:
        rc, out, err = dflash("kill", "--run-root", str(tmp_path), "--grace", "2")
    finally:
        try:
            os.killpg(run["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert rc == 0 and b"SIGTERM sent" in err
    assert_safe(out, err)


def test_restart_names_gpu_processes_from_nvidia_smi_safely(
    tmp_path: Path, fake_smi: FakeSmi
) -> None:
    """nvidia-smi (the stand-in on PATH) names the run's GPU process with the payload and
    keeps reporting its memory after the kill: restart's release wait quotes the name."""
    root = str(tmp_path / "runs")
    fake_smi.write(box(2))
    rc, out, err = dflash(
        "launch", "--json", "--run-root", root, "--command", "sleep 60", "--start-window", "1"
    )
    run = json.loads(out)
    assert run["ok"], out + err
    fake_smi.write(box(2, busy=[0], mem_used=1002), [app(run["pid"], gpu=0, name=PAYLOAD)])
    try:
        rc, out, err = dflash(
            "restart", "--run-root", root, "--grace", "1", "--release-timeout", "1.5"
        )
    finally:
        try:
            os.killpg(run["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert rc == 1 and b"not released" in out + err
    assert_safe(out, err)


def runtime_stub(folder: Path) -> dict[str, str]:
    """A ``docker`` on PATH that fails as a runtime does, quoting the payload on stderr."""
    folder.mkdir(parents=True, exist_ok=True)
    stub = folder / "docker"
    words = sh_quote(PRINTF + " no such container\\n")
    stub.write_text(f"#!/bin/sh\nprintf {words} >&2\nexit 1\n")
    stub.chmod(0o755)
    return dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("verb", ["launch", "kill", "status"])
def test_errors_quoting_a_container_runtimes_stderr_are_safe(tmp_path: Path, verb: str) -> None:
    env = runtime_stub(tmp_path / "bin")
    args = [verb, "--run-root", str(tmp_path / "runs"), "--container", "docker:box"]
    rc, out, err = dflash(*args, env=env)
    assert rc == 1
    assert_safe(out, err)


@pytest.mark.ssh
def test_errors_quoting_a_remote_sides_stderr_are_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the loopback sshd: the remote's container runtime fails with the payload."""
    server = make_sshd(tmp_path / "sshd")
    runtime_stub(server.root / "bin")  # the sessions' PATH has this folder
    server.start()
    try:
        local_view(server, monkeypatch)
        for verb in ("launch", "status"):
            rc, out, err = dflash(
                verb, "--host", ALIAS, "--run-root", "/tmp/none", "--container", "docker:box"
            )
            assert rc == 1
            assert_safe(out, err)
    finally:
        server.stop()


# -- supervise: --once's decision, --detach's failure, supervisor.log itself --

HOSTILE_JOB = (  # alive for 3 s (seen alive), then its own launch_error, then a failure
    f'sleep 3; printf {sh_quote(PRINTF)} >"$DFLASH_RUN_DIR/launch_error"; exit 1'
)


def _wait_ended(root: Path) -> None:
    import time

    deadline = time.monotonic() + 30
    while not list(root.glob("*/exit")):
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)


def test_supervise_once_and_its_log_quote_a_launch_error_safely(tmp_path: Path) -> None:
    """``--once`` while the job lives (seen alive), then ``--once`` after its hostile failure:
    the decision printed on stdout and the log lines on stderr quote it, escaped."""
    root = tmp_path / "runs"
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[restart]\nretries = 2\nbackoff_s = 60\n")
    rc, out, err = dflash("launch", "--run-root", str(root), "--command", HOSTILE_JOB,
                          "--start-window", "1")  # fmt: skip
    assert rc == 0, out + err
    once = ("supervise", "--once", "--auto-restart", "--config", str(cfg), "--run-root",
            str(root), "--command", HOSTILE_JOB, "--start-window", "1")  # fmt: skip
    rc, out, err = dflash(*once)
    assert rc == 0 and b"watch: run running" in out, out + err
    _wait_ended(root)
    rc, out, err = dflash(*once)
    assert rc == 0 and out.startswith(b"restart: run ") and b"restart 1/2 in 60 s" in out
    assert b"decision: restart: run" in err  # the log line (stderr in the foreground)
    assert_safe(out, err)
    assert b"after-nul" in out and b"\\x1b]52;" in out  # shown, as text


def test_supervise_detach_prints_a_hostile_log_tail_safely(tmp_path: Path) -> None:
    """A job can write into its run root, supervisor.log among it; a detached supervisor that
    dies before its first heartbeat has that log's tail printed: escaped. (The child dies at
    start through a sitecustomize that the parent, without the ready pipe, passes by.)"""
    root = tmp_path / "runs"
    root.mkdir()
    (root / "supervisor.log").write_bytes(PAYLOAD.encode() + b"\0after-nul\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if os.environ.get('DFLASH_SUPERVISE_READY_FD'):\n"
        "    sys.stderr.write('child ' + chr(27) + ']0;PWNED-TOO' + chr(7) + ' dies\\n')\n"
        "    sys.stderr.flush(); os._exit(5)\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    rc, out, err = dflash("supervise", "--detach", "--run-root", str(root), "--command", "true",
                          env=env)  # fmt: skip
    assert rc == 5, out + err
    assert b"dflash-tui supervise: " in err and b"PWNED-TOO" in err and b"after-nul" in err
    assert_safe(out, err)


def test_supervisor_log_file_stores_decisions_escaped(tmp_path: Path) -> None:
    """The detached supervisor's own log (``tail supervisor.log`` on a terminal) quotes the
    hostile launch_error escaped, not raw."""
    import time

    root = tmp_path / "runs"
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[restart]\nretries = 2\nbackoff_s = 60\n")
    rc, out, err = dflash("supervise", "--detach", "--auto-restart", "--config", str(cfg),
                          "--run-root", str(root), "--command", HOSTILE_JOB, "--interval", "0.5",
                          "--start-window", "1")  # fmt: skip
    assert rc == 0, out + err
    log = root / "supervisor.log"
    try:
        rc, out, err = dflash("launch", "--run-root", str(root), "--command", HOSTILE_JOB,
                              "--start-window", "1")  # fmt: skip
        assert rc == 0, out + err
        deadline = time.monotonic() + 40
        while b"decision: restart" not in log.read_bytes():
            assert time.monotonic() < deadline, log.read_bytes()[-2000:]
            time.sleep(0.2)
    finally:
        dflash("supervise", "--stop", "--run-root", str(root))
    data = log.read_bytes()
    assert b"after-nul" in data and raw_bytes(data) == []
