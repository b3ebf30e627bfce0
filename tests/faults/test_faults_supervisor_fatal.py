"""After a real ``supervise`` crash loop (a command that exits 1 at once, two retries, a short
backoff) gave up, every reader says so from the one record: ``status``'s line says FATAL with
"gave up after 2 restarts at T" and the last exit (never "auto-restart on"), ``status --json``
says ``state: fatal``, the app's header draws the FATAL chip, and the app's timeline lists the
supervisor's two restarts and its FATAL, although they came before the app was opened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervise_util import cleanup, cli, config, record, run_dirs, wait_for
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.header import RunHeader
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.timings import RestartPolicy

pytestmark = pytest.mark.slow
CRASH = "exit 1"


@pytest.fixture
def fatal_root(tmp_path: Path) -> Iterator[Path]:
    """A run root whose supervisor gave up after two restarts (and still runs)."""
    root = tmp_path / "runs"
    cfg = config(tmp_path / "cfg.toml", "retries = 2\nbackoff_s = 0.2\nmax_backoff_s = 0.5")
    opts = ("--config", str(cfg), "--run-root", str(root), "--command", CRASH,
            "--interval", "0.5", "--start-window", "0.5")  # fmt: skip
    try:
        res = cli("supervise", *opts, "--auto-restart", "--detach")
        assert res.returncode == 0, res.stderr
        cli("launch", *opts)  # it ends at once: "launch-failed", exit status 1
        wait_for(
            lambda: (record(root).get("last_decision") or {}).get("action") == "fatal", 60, "FATAL"
        )
        yield root
    finally:
        cleanup(root)


def test_status_says_fatal_with_when_and_the_last_exit(fatal_root: Path) -> None:
    runs = run_dirs(fatal_root)
    assert len(runs) == 3  # the run and its two restarts
    out = cli("status", "--run-root", str(fatal_root)).stdout
    # the line as one (the table wraps it at its width)
    line = " ".join(out.split()).partition("supervisor: ")[2].partition(" machine: ")[0]
    assert "FATAL: gave up after 2 restarts at " in line, line
    assert f"(run {runs[-1].name} launch-failed (exit 1" in line, line
    assert "auto-restart on" not in line and "fresh" in line, line
    doc = json.loads(cli("status", "--json", "--run-root", str(fatal_root)).stdout)
    sup = doc["supervisor"]
    assert sup["state"] == "fatal" and sup["fatal"]["restarts"] == 2, sup
    assert [e["kind"] for e in sup["history"]] == ["restart", "restart", "fatal"], sup["history"]


async def test_the_app_header_and_timeline_show_the_supervisors_fatal(fatal_root: Path) -> None:
    pid = record(fatal_root)["pid"]
    policy = RestartPolicy(enabled=True, retries=2, backoff_s=0.2, max_backoff_s=0.5)
    host = HostConfig(command=CRASH, run_root=str(fatal_root), restart=policy)
    app = DflashApp(Config(hosts=(host,), interval=0.3))
    async with app.run_test(size=(200, 40)) as pilot:
        head = app.screen.query_one(RunHeader)
        await until(pilot, lambda: "FATAL" in str(head.render()), 20)
        text = str(head.render())
        assert " FATAL " in text and "gave up after 2 restarts at" in text, text
        assert "supervised" in text, text
        assert "auto-restart on" not in text
        said = [e.text for e in app.current.timeline.events if e.kind == "supervisor"]
    restarts = [t for t in said if "restarted run" in t]
    assert len(restarts) == 2 and all(t.startswith(f"supervisor PID {pid}: ") for t in said), said
    assert "FATAL: gave up after 2 restarts" in said[-1], said
