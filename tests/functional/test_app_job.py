"""A job across two hosts in the app (this machine and a real loopback sshd): ``l`` on a member
launches the whole job, the overview shows the job as one row with each member's state, and
``k`` stops both members. ``job_text`` (the row's renderer) is checked without a terminal.

Uses tests/integration/loopback_sshd.py (skipped without /usr/sbin/sshd, as there).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable
from supervise_util import cleanup
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.screens.overview import HostOverview, job_text
from dflash_tui.app.widgets.palette import palette_for
from dflash_tui.core.base.config import load_file
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.diagnosis.job import MemberView

pytestmark = [pytest.mark.ssh, pytest.mark.slow]
JOB = "sh -c 'i=0; while :; do i=$((i+1)); echo step=$i; sleep 0.2; done'"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackSshd]:
    why = sshd_unavailable()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the loopback sshd tests: {why}", pytrace=False)
        pytest.skip(why)
    srv = LoopbackSshd(tmp_path / "sshd")
    for k, v in srv.env.items():
        monkeypatch.setenv(k, v)
    srv.start()
    yield srv
    srv.stop()


def test_job_text_shows_the_job_state_and_each_member() -> None:
    from textual.theme import BUILTIN_THEMES

    pal = palette_for(BUILTIN_THEMES["textual-dark"])
    t = job_text(
        "pair", [MemberView("a", "running", "r", 7), MemberView("b\x1b[2J", "killed")], pal
    )
    assert (
        t.plain == "  job pair  BROKEN  2 nodes: a running step 7 · b\\x1b[2J killed"
    )  # made safe
    assert t.spans[1].style == pal.chip("error")  # a broken job reads as an error


def runs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


async def test_the_app_launches_and_kills_a_job_on_both_hosts(
    server: LoopbackSshd, tmp_path: Path
) -> None:
    roots = (tmp_path / "a", tmp_path / "b")
    cfg_file = tmp_path / "cfg.toml"
    cfg_file.write_text(
        "".join(
            f'[[hosts]]\nlabel = "{label}"\njob = "pair"\n{addr}[hosts.run]\n'
            f"command = {JOB!r}\nrun_root = {str(root)!r}\n"
            for label, addr, root in (
                ("a", "", roots[0]),
                ("b", f'address = "{ALIAS}"\n', roots[1]),
            )
        )
    )
    cfg = load_file(cfg_file)
    # (the flight recorder off: launching and killing the job is what is checked here)
    off = RecordSettings(enabled=False)
    app = DflashApp(Config(hosts=cfg.hosts, jobs=cfg.jobs, interval=0.5, record=off))
    a, b = app.host_states
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: a.samples >= 1 and b.samples >= 1, timeout=30)
            overview = app.screen.query_one(HostOverview)
            await pilot.press("l")
            both = lambda: all(  # noqa: E731
                s.diagnosis is not None and s.diagnosis.run_state == "running" for s in (a, b)
            )
            await until(pilot, both, timeout=40)
            assert [len(runs(r)) for r in roots] == [1, 1]
            await until(pilot, lambda: "RUNNING" in overview.row_text(2), timeout=10)
            assert overview.row_text(2).startswith("  job pair  RUNNING  2 nodes: a running")
            await until(pilot, lambda: not app.control.waits_active(), timeout=30)
            await pilot.press("k")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            gone = lambda: all(  # noqa: E731
                s.diagnosis is not None and s.diagnosis.run_state == "killed" for s in (a, b)
            )
            await until(pilot, gone, timeout=40)
            await until(pilot, lambda: "KILLED" in overview.row_text(2), timeout=10)
    finally:
        for r in roots:
            cleanup(r)
