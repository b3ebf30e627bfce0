"""The default log filter never hides why a run failed.

A failed launch's only line and a crash's first lines pass the default filter; the pane says
inside itself (not only in a title that 120 columns can cut) how many lines the filter hides,
and a pane whose every line is filtered out shows the last one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import screen_text, until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control import kill as control_kill
from dflash_tui.core.link.connect import make_transport

SIZE = (120, 40)
CRASH_FIRST_LINES = [
    "Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Segmentation fault (core dumped)",
    "Aborted (core dumped)",
    "Killed",
    "OOMKilled",
    "python3: can't open file '/w/train.py': [Errno 2] No such file or directory",
    "sh: 1: torchrun: not found",
    "RuntimeError: NCCL communicator was aborted",
    "terminate called after throwing an instance of 'c10::Error'",
    "FAILED: rank 3 exited with code 1",
]


def log_snap(lines: list[str]) -> Snapshot:
    return Snapshot.from_dict(
        {
            "time": 1.0,
            "telemetry": {"source": "none", "error": "no NVML and no nvidia-smi on PATH"},
            "procs": [{"pid": 1, "ppid": 0, "cmd": "init", "state": "S"}],
            "logs": [{"path": "/w/out.log", "exists": True, "size": 1, "lines": lines}],
        }
    )


async def shown(pilot: Pilot, app: DflashApp) -> LogTail:
    await until(pilot, lambda: app.samples >= 1)
    await pilot.pause(0.2)  # one flush of the tails
    return app.screen.query_one(LogTail)


async def test_a_crash_first_lines_pass_the_default_filter() -> None:
    lines = ["noise 1", *CRASH_FIRST_LINES, "noise 2"]
    app = DflashApp(Config(), source=ScriptedSource([log_snap(lines)]))
    async with app.run_test(size=SIZE) as pilot:
        tail = await shown(pilot, app)
        assert list(tail.log_view.lines) == CRASH_FIRST_LINES
        text = screen_text(app)
        assert "2 lines hidden by the filter (a: all)" in text


async def test_a_pane_whose_lines_are_all_filtered_out_shows_the_last_one() -> None:
    lines = ["noise 1", "noise 2", "the very last noise"]
    app = DflashApp(Config(), source=ScriptedSource([log_snap(lines)]))
    async with app.run_test(size=SIZE) as pilot:
        tail = await shown(pilot, app)
        assert list(tail.log_view.lines) == []
        text = screen_text(app)
        assert "3 lines hidden by the filter (a: all); the last one:" in text
        assert "the very last noise" in text
        await pilot.press("a")  # all lines: nothing hidden, no notice
        await pilot.pause(0.2)
        assert list(tail.log_view.lines) == lines
        assert "hidden by the filter" not in screen_text(app)


@pytest.fixture
async def typo_host(tmp_path: Path) -> AsyncIterator[HostConfig]:
    h = HostConfig(command="/usr/bin/pyhton3 -c 1", run_root=str(tmp_path / "runs"))
    yield h
    transport = make_transport(h)
    try:
        await control_kill.kill_latest(transport, h, grace=2.0, check_gpu=False)
    finally:
        await transport.close()


async def test_a_failed_launch_line_is_on_screen(typo_host: HostConfig) -> None:
    app = DflashApp(Config(hosts=(typo_host,), interval=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("l")

        def failed() -> bool:
            last = app.current.last
            return last is not None and last.diagnosis.run_state == "launch-failed"

        await until(pilot, failed)
        tail = app.screen.query_one(LogTail)
        want = "dflash-tui: launch failed: sh: 1: /usr/bin/pyhton3: not found"
        await until(pilot, lambda: want in list(tail.log_view.lines), timeout=5.0)
        await until(pilot, lambda: want in screen_text(app), timeout=5.0)
