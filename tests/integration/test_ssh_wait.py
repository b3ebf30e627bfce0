"""``dflash-tui wait`` over the loopback sshd: a run that fails at once fails the wait within
the start window plus one interval, quoting its log; the tiny pipeline reaches its first step;
a host that cannot be reached fails the wait after the feed's stall time."""

from __future__ import annotations

from pathlib import Path

import pytest
from loopback_sshd import ALIAS, LoopbackSshd
from wait_util import TINY, cli, timed

from dflash_tui.core.base.config_types import DEFAULT_INTERVAL
from dflash_tui.core.base.timings import START_WINDOW_S

pytestmark = pytest.mark.ssh


def test_a_failed_launch_over_ssh_fails_the_wait(ssh_env: LoopbackSshd, tmp_path: Path) -> None:
    common = ["--host", ALIAS, "--run-root", str(tmp_path / "runs")]
    cli("launch", *common, "--command", "echo 'CUDA error: no kernel image'; exit 3")
    res, took = timed("wait", *common, "--until", "first-step", "--timeout", "60")
    assert res.returncode == 1, res.stdout + res.stderr
    assert took < START_WINDOW_S + DEFAULT_INTERVAL, took
    assert "launch-failed" in res.stdout and "log: CUDA error: no kernel image" in res.stdout


@pytest.mark.slow
def test_the_tiny_pipeline_over_ssh_reaches_its_first_step(
    ssh_env: LoopbackSshd, tmp_path: Path
) -> None:
    common = ["--host", ALIAS, "--run-root", str(tmp_path / "runs")]
    launched = cli("launch", *common, "--command", TINY)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    try:
        res, _ = timed("wait", *common, "--until", "first-step", "--timeout", "150")
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.startswith("first-step reached: run ") and " step " in res.stdout
    finally:
        cli("kill", *common)


@pytest.mark.slow
def test_an_unreachable_host_fails_the_wait_after_the_stall_time(tmp_path: Path) -> None:
    res, took = timed("wait", "--host", "127.0.0.1:1", "--until", "started", "--timeout", "90")
    assert res.returncode == 1, res.stdout + res.stderr
    assert 30 <= took < 60, took  # the feed's stall time: max(5 intervals, 30 s)
    assert "cannot connect" in res.stdout
