"""`dflash-tui status` end to end: real probe subprocess, stand-in nvidia-smi, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scenario import app, box, gpu

SEED_LOG = "/workspace/train_stdout_flex6.log"


def status(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "status", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def status_json(*args: str) -> dict[str, Any]:
    res = status("--json", *args)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return json.loads(res.stdout)


def labels(doc: dict[str, Any]) -> dict[int, list[str]]:
    return {g["index"]: g["labels"] for g in doc["gpus"]}


def finding(doc: dict[str, Any], code: str) -> dict[str, Any]:
    return next(f for f in doc["findings"] if f["code"] == code)


def test_seed_incident(fake_smi: Any, tmp_path: Path) -> None:
    doc = status_json("--log", SEED_LOG, "--run-root", str(tmp_path / "runs"))
    assert doc["schema"] == 1 and doc["host"] == "local" and doc["telemetry"] == "nvidia-smi"
    got = labels(doc)
    assert [i for i, lb in got.items() if lb == ["busy-no-memory"]] == [2, 3, 7]
    assert [i for i, lb in got.items() if lb == ["idle"]] == [0, 1, 4, 5, 6]
    assert [g["role"] for g in doc["gpus"]] == ["target"] * 5 + ["drafter"] * 3
    assert all(g["mem_used_mib"] == 0 and g["processes"] == [] for g in doc["gpus"])
    topo = finding(doc, "topology-mismatch")
    assert "target 3/5 and drafter 2/3 GPUs healthy" in topo["message"]
    assert SEED_LOG in finding(doc, "log-missing")["message"]
    assert doc["run"]["state"] == "none"
    assert doc["run"]["logs"] == [
        {"path": SEED_LOG, "exists": False, "size": None, "run_log": False}
    ]
    res = status("--json", "--log", SEED_LOG, "--run-root", str(tmp_path), "--fail-on", "warning")
    assert res.returncode == 1


def test_readable_table_shows_hostile_path_literally(fake_smi: Any, tmp_path: Path) -> None:
    hostile = str(tmp_path / "[bold red]x\x1b[2J.log")
    res = status("--log", hostile, "--run-root", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "busy-no-memory" in res.stdout and "[bold red]x" in res.stdout
    assert "\x1b[2J" not in res.stdout


def test_no_driver_reports_run_and_logs(tmp_path: Path) -> None:
    # This machine (and CI) has no NVIDIA driver: no nvidia-smi on PATH, NVML cannot start.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    env.pop("FAKE_SMI_SCENARIO", None)
    res = status(
        "--json", "--log", str(tmp_path / "a log.txt"), "--run-root", str(tmp_path), env=env
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["telemetry"] == "none" and doc["gpus"] == []
    assert finding(doc, "telemetry-unavailable")["severity"] == "warning"
    assert doc["run"]["logs"][0]["exists"] is False
    assert "log-missing" in {f["code"] for f in doc["findings"]}


@pytest.fixture
def orphan_pid() -> Iterator[int]:
    """A real process reparented to init (double fork), like a worker left by a dead run."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: fork the orphan and exit at once
        os.close(r)
        grand = os.fork()
        if grand == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "60"])
        os.write(w, str(grand).encode())
        os._exit(0)
    os.close(w)
    grand = int(os.read(r, 32))
    os.close(r)
    os.waitpid(pid, 0)
    yield grand
    os.kill(grand, signal.SIGKILL)


def test_orphan_and_foreign_processes(fake_smi: Any, tmp_path: Path, orphan_pid: int) -> None:
    foreign = subprocess.Popen(["sleep", "60"])
    try:
        # Wait until init has adopted the orphan: /proc shows ppid 1 (or a subreaper).
        for _ in range(50):
            stat = Path(f"/proc/{orphan_pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[1] == "1":
                break
            time.sleep(0.02)
        gpus = box(8)
        gpus[6] = gpu(6, util=0, mem_used=70000)
        gpus[1] = gpu(1, util=55, mem_used=20000)
        fake_smi.write(gpus, [app(orphan_pid, 6, 70000), app(foreign.pid, 1, 20000, "sleep")])
        doc = status_json("--run-root", str(tmp_path))
        got = labels(doc)
        assert got[6] == ["orphan-process"] and got[1] == ["foreign-process"]
        owners = {p["pid"]: p["owner"] for g in doc["gpus"] for p in g["processes"]}
        assert owners == {orphan_pid: "orphan", foreign.pid: "foreign"}
        assert str(orphan_pid) in finding(doc, "orphan-process")["message"]
    finally:
        foreign.kill()
        foreign.wait()


def test_other_topology_and_unassigned_activity(fake_smi: Any, tmp_path: Path) -> None:
    gpus = box(8)
    gpus[7] = gpu(7, util=80, mem_used=30000)
    fake_smi.write(gpus)
    doc = status_json("--topology", "0-5:6", "--run-root", str(tmp_path))
    assert labels(doc)[7] == ["unexpected-activity"]
    assert [g["role"] for g in doc["gpus"]][6:] == ["drafter", "unassigned"]
    doc = status_json("--topology", "0-3:4-9", "--run-root", str(tmp_path))
    assert labels(doc)[8] == ["missing"] and labels(doc)[9] == ["missing"]


def test_real_h200_bytes_under_load(fake_smi: Any, tmp_path: Path) -> None:
    fake_smi.use("h200-load")
    doc = status_json("--topology", "0:", "--run-root", str(tmp_path))
    g = doc["gpus"][0]
    assert (g["name"], g["util"], g["mem_used_mib"], g["mem_total_mib"]) == (
        "NVIDIA H200",
        100,
        1011,
        143771,
    )
    assert g["processes"][0]["pid"] == 424 and g["processes"][0]["used_mib"] == 1002


def test_a_reader_that_leaves_early_is_not_an_error(fake_smi: Any, tmp_path: Path) -> None:
    # `dflash-tui status --json | head -3`: the pipe closes before the document is written.
    r, w = os.pipe()
    os.close(r)  # the reader is gone before a byte is written
    cmd = [
        sys.executable,
        "-m",
        "dflash_tui.cli.main",
        "status",
        "--json",
        "--run-root",
        str(tmp_path),
    ]
    res = subprocess.run(cmd, stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(w)
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr
    assert res.returncode == 141  # as a shell reports a writer ended by SIGPIPE
