"""A log missing at the app's first sample went missing before it, when is not known: the log
pane's notice and the finding both say "for at least"; a log removed while the app watches is
missing for a known time, said plainly. The real app with its real local probe."""

from __future__ import annotations

from pathlib import Path

from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.findings.panel import FindingsList
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.core.base.config_types import Config, HostConfig


def notice(app: DflashApp) -> str:
    return str(app.screen.query_one(LogTail).missing_bar.render())


def findings(app: DflashApp) -> str:
    return str(app.screen.query_one(FindingsList).query_one(".body").render())


async def test_missing_from_the_first_sample_reads_at_least(tmp_path: Path) -> None:
    log = tmp_path / "never-written.log"
    host = HostConfig(run_root=str(tmp_path / "runs"), logs=(str(log),))
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 3 and "MISSING" in notice(app))
        await until(pilot, lambda: "log-missing" in findings(app))
        assert "(missing for at least " in notice(app), notice(app)
        assert "does not exist for at least " in findings(app), findings(app)


async def test_removed_while_watched_reads_plainly(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step=1 loss=2.0 tok/s=100\n")
    host = HostConfig(run_root=str(tmp_path / "runs"), logs=(str(log),))
    app = DflashApp(Config(hosts=(host,), interval=0.5))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 2)
        log.unlink()
        await until(pilot, lambda: "MISSING" in notice(app))
        await until(pilot, lambda: "log-missing" in findings(app))
        assert "(missing for " in notice(app) and "at least" not in notice(app), notice(app)
        assert "at least" not in findings(app), findings(app)
