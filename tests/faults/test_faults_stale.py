"""Stale data is never shown as live.

Real ways for samples to stop without any error: the SSH link freezes (the loopback sshd's
session processes are SIGSTOPped: nothing closes, keepalives take seconds to notice), the
local probe process gets stuck (SIGSTOPped), and the probe inside the app is wedged in a
sample; the feed waits 30 s before calling a probe stuck. The live app must say ``stale Ns``
from the first missed sample (about 1.5 intervals), not ``connected``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sshd_fixtures import ALIAS, local_view, make_sshd
from support import until
from textual.pilot import Pilot

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.header import RunHeader
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.probe import main as probe_main

INTERVAL = 0.5
DUE = INTERVAL * 1.5  # a sample older than this is stale (the header checks twice a second)


def header_text(app: DflashApp) -> str:
    return str(app.screen.query_one(RunHeader).render()).split("\n")[0]


def probes_of(pid: int) -> list[int]:
    """Live probe processes (``python3 - --interval=...``) descending from ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if b"-" in cmd[1:3] and any(a.startswith(b"--interval=") for a in cmd):
            ppid = int(stat.rpartition(")")[2].split()[1])
            if ppid == pid:
                out.append(int(entry))
    return out


async def stale_after_freeze(pilot: Pilot, app: DflashApp, freeze, thaw) -> float:  # type: ignore[no-untyped-def]
    """Seconds from the freeze until the header says stale; the header never claims
    ``connected`` once a sample is overdue."""
    await until(pilot, lambda: app.samples >= 2, timeout=60)
    await until(pilot, lambda: "connected" in header_text(app), timeout=30)
    start = app.samples
    freeze()
    t0 = time.monotonic()
    try:
        await until(pilot, lambda: "stale" in header_text(app), timeout=15)
        took = time.monotonic() - t0
        text = header_text(app)
        assert "connected" not in text and app.samples <= start + 1, text
        await pilot.pause(1.2)
        assert "stale" in header_text(app)  # it stays stale, counting up
    finally:
        thaw()
    await until(pilot, lambda: "connected" in header_text(app), timeout=30)
    # Samples queued behind the frozen link may still be drawing when run_test tears the
    # screens down ("main screen missing", a race of the app's feed, not of this fault):
    # stop the feed first.
    for worker in app.workers:
        if worker.group.startswith("feed:"):
            worker.cancel()
    await pilot.pause(0.3)
    return took


async def test_a_stuck_local_probe_process_is_shown_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another interpreter named for the probe: the probe runs as a process of its own.
    monkeypatch.setenv("DFLASH_TUI_PYTHON", "python3")
    cfg = Config(hosts=(HostConfig(run_root=str(tmp_path / "runs")),), interval=INTERVAL)
    app = DflashApp(cfg)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: bool(probes_of(os.getpid())), timeout=30)
        (probe,) = probes_of(os.getpid())
        took = await stale_after_freeze(
            pilot,
            app,
            lambda: os.kill(probe, signal.SIGSTOP),
            lambda: os.kill(probe, signal.SIGCONT),
        )
    assert took < DUE + 1.5


async def test_a_stuck_probe_inside_the_app_is_shown_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The probe inside the app (core/link/local_feed.py) wedged in a sample, as in a driver
    # call that does not return, which this machine cannot do for real.
    go = threading.Event()
    go.set()
    sample = probe_main.Probe.sample

    def wedged(self: Any) -> dict[str, Any]:
        go.wait()
        return sample(self)

    monkeypatch.setattr(probe_main.Probe, "sample", wedged)
    cfg = Config(hosts=(HostConfig(run_root=str(tmp_path / "runs")),), interval=INTERVAL)
    app = DflashApp(cfg)
    async with app.run_test(size=(160, 40)) as pilot:
        took = await stale_after_freeze(pilot, app, go.clear, go.set)
        assert not probes_of(os.getpid())  # no probe process: it was the one inside
    assert took < DUE + 1.5


@pytest.mark.ssh
async def test_a_frozen_ssh_link_is_shown_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_sshd(tmp_path / "sshd")  # its own server: this test freezes it
    server.start()
    try:
        local_view(server, monkeypatch)
        host = HostConfig(address=ALIAS, run_root=str(tmp_path / "runs"))
        app = DflashApp(Config(hosts=(host,), interval=INTERVAL))
        async with app.run_test(size=(160, 40)) as pilot:
            took = await stale_after_freeze(
                pilot,
                app,
                lambda: server.signal_sessions(signal.SIGSTOP),
                lambda: server.signal_sessions(signal.SIGCONT),
            )
    finally:
        server.signal_sessions(signal.SIGCONT)
        server.stop()
    assert took < DUE + 1.5
