"""What a run's end is called: a launch that never started is "launch failed", not a crash;
a run whose group vanished without an exit code has an unknown exit code, never "none".
Real launches under a real run root, read by the real app and the real ``status``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.core.base.config_types import Config, HostConfig

ROOT = Path(__file__).resolve().parents[2]


def dflash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


async def test_a_launch_that_never_started_is_toasted_as_launch_failed(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    app = DflashApp(Config(hosts=(HostConfig(run_root=str(root)),), interval=0.5))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        res = dflash("launch", "--run-root", str(root), "--command", "exit 3",
                     "--start-window", "1")  # fmt: skip
        assert res.returncode == 1 and "launch-failed" in res.stdout, res.stdout + res.stderr

        def titles() -> list[str]:
            return [str(n.title) for n in app._notifications]

        await until(pilot, lambda: any("launch failed" in t for t in titles()), timeout=30)
        assert not any("crashed" in t for t in titles()), titles()


def test_a_vanished_group_has_an_unknown_exit_code(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    args = ["--run-root", str(root), "--command", "sleep 120", "--start-window", "1"]
    run = json.loads(dflash("launch", "--json", *args).stdout)
    assert run["ok"], run
    os.killpg(run["pgid"], signal.SIGKILL)  # the wrapper too: nobody writes the exit code
    deadline = time.monotonic() + 20
    while True:
        doc = json.loads(dflash("status", "--json", "--run-root", str(root)).stdout)
        if doc["run"]["state"] == "killed" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert doc["run"]["state"] == "killed" and doc["run"]["exit_code"] is None
    exited = [f["message"] for f in doc["findings"] if f["code"] == "run-exited"]
    assert exited and "exit code unknown" in exited[0], doc["findings"]
    assert "none" not in exited[0]


async def test_the_alert_for_a_vanished_group_says_exit_code_unknown(tmp_path: Path) -> None:
    """The app's own alert (to a real HTTP receiver) for a run SIGKILLed with its wrapper: the
    exit code is unknown, and the alert says so in the words of the finding and the timeline,
    never ``exit ?``."""
    from receiver import Receiver

    from dflash_tui.core.base.alert_config import AlertSettings

    root = tmp_path / "runs"
    with Receiver() as rx:
        alerts = AlertSettings(webhook=rx.url, on=("run-exited",), log_lines=0, timeout_s=5.0)
        app = DflashApp(Config(hosts=(HostConfig(run_root=str(root)),), interval=0.3,
                               alerts=alerts))  # fmt: skip
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.samples >= 1)
            args = ["--run-root", str(root), "--command", "sleep 120", "--start-window", "1"]
            run = json.loads(dflash("launch", "--json", *args).stdout)
            assert run["ok"], run
            await until(pilot, lambda: app.current.last is not None
                        and app.current.last.diagnosis.run_state == "running", 20)  # fmt: skip
            os.killpg(run["pgid"], signal.SIGKILL)
            await until(pilot, lambda: "run-exited" in rx.codes(), 30)
        messages = [b["alert"]["message"] for b in rx.bodies]
    assert "exit code unknown: the process group vanished" in messages[0], messages
    assert "exit ?" not in messages[0]
