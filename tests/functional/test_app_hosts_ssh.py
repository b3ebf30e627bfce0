"""Two live hosts in the app, the second over a real loopback OpenSSH sshd: the sshd goes away,
its row says DOWN while this machine's host keeps updating, and it comes back.

Uses tests/integration/loopback_sshd.py (skipped without /usr/sbin/sshd or root, as there).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.core.base.config import Config, HostConfig

pytestmark = [pytest.mark.ssh, pytest.mark.slow]


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


async def test_ssh_host_down_and_back_while_the_local_host_updates(
    server: LoopbackSshd, tmp_path: Path
) -> None:
    local = HostConfig(run_root=str(tmp_path / "a"))
    remote = HostConfig(address=ALIAS, run_root=str(tmp_path / "b"))
    app = DflashApp(Config(hosts=(local, remote), interval=0.3))
    a, b = app.host_states
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: a.samples >= 1 and b.samples >= 1)
        overview = app.screen.query_one(HostOverview)
        assert f"2 {ALIAS}" in overview.row_text(1) and "connected" in overview.row_text(1)
        server.stop()
        await until(pilot, lambda: b.link == "down", timeout=30)
        seen = a.samples
        await until(pilot, lambda: a.samples >= seen + 3)  # the local host never stalls
        assert b.link == "down" and "DOWN" in overview.row_text(1)
        assert "connected" in overview.row_text(0)
        drawn_b = b.samples
        server.start()
        await until(pilot, lambda: b.link == "connected" and b.samples > drawn_b, timeout=30)
        assert "DOWN" not in overview.row_text(1)
