"""The app's own ``[alerts]``: with no live supervisor the app sends them, through
the core's alerter (a real command hook and a real HTTP receiver on 127.0.0.1), rate-limited,
with the run's log tail; beside a live ``dflash-tui supervise`` it sends none (the supervisor
does: one alert per crash, not two); a notifier that fails or hangs is logged on the timeline
and the app goes on sampling."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from receiver import Receiver
from supervise_util import cleanup, cli, config, hook, hook_alerts, record, run_dirs
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.timings import RestartPolicy

pytestmark = pytest.mark.slow
SIZE = (160, 40)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    r = tmp_path / "runs"
    yield r
    cleanup(r)


def app_for(root: Path, job: str, alerts: AlertSettings, policy: RestartPolicy) -> DflashApp:
    host = HostConfig(command=job, run_root=str(root), restart=policy)
    app = DflashApp(Config(hosts=(host,), interval=0.3, alerts=alerts))
    bridge = app.host_states[0].bridge
    bridge.supervise_poll, bridge.start_window = 0.1, 0.5
    return app


def timeline(app: DflashApp) -> str:
    return "\n".join(e.text for e in app.current.timeline.events if e.kind == "alert")


def every_event(app: DflashApp) -> str:
    """The whole timeline: why a relaunch failed, when one did."""
    return "\n".join(f"{e.kind}: {e.text}" for e in app.current.timeline.events)


async def test_the_app_alerts_when_nobody_supervises(root: Path, tmp_path: Path) -> None:
    """A crash loop under the app's own auto-restart (1 retry): run-exited, restart, then
    FATAL; each once (the second crash is not sent on its own: rate limit, or after FATAL), by
    the webhook and the command hook both, the run-exited one with the run's last log lines."""
    job = "echo first-line; echo last-words-before-crash; sleep 4; exit 3"
    out = tmp_path / "hook"
    # The command lane sends one alert after another, each allowed timeout_s, and a hook cut
    # off at its deadline writes nothing: the deadline is far above a hook's time on a loaded
    # machine, so that waiting for the third is not a race against the first two.
    alerts = AlertSettings(command=hook(out), min_interval_s=300.0, log_lines=5, timeout_s=30.0)
    policy = RestartPolicy(enabled=True, retries=1, backoff_s=0.5, max_backoff_s=1.0)
    with Receiver() as rx:
        app = app_for(root, job, replace(alerts, webhook=rx.url), policy)
        app.host_states[0].bridge.supervise_poll = 0.5
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("l")
            await until(pilot, lambda: "fatal" in rx.codes(), 120, lambda: timeline(app))
            await until(pilot, lambda: len(hook_alerts(out)) >= 3, 100, lambda: timeline(app))
            await pilot.pause(2.0)  # nothing more may follow FATAL
            events = every_event(app)
        assert len(run_dirs(root)) == 2, events  # retries + 1
        assert sorted(rx.codes()) == ["fatal", "restart", "run-exited"], rx.codes()
        assert sorted(a["code"] for a in hook_alerts(out)) == ["fatal", "restart", "run-exited"]
        exited = next(b for b in rx.bodies if b["alert"]["code"] == "run-exited")
        assert exited["alert"]["source"] == "app" and exited["alert"]["host"] == "local"
        assert "last-words-before-crash" in exited["alert"]["log_tail"]
        assert "last-words-before-crash" in exited["text"]  # Slack's field carries the tail
        fatal = next(b for b in rx.bodies if b["alert"]["code"] == "fatal")
        # The second crash: held by the rate limit and summed up in FATAL, or seen after FATAL
        # (the auto-restart polls faster than the samples come), when nothing is sent at all.
        assert fatal["alert"]["held"] in ({"run-exited": 1}, {})
    assert "alert run-exited sent via webhook" in timeline(app)


async def test_a_failing_and_a_hung_notifier_stop_nothing(root: Path, tmp_path: Path) -> None:
    """A webhook answering 500 and a command that hangs (cut off after timeout_s): both
    logged on the timeline; the app keeps sampling and drawing."""
    job = "sleep 4; exit 4"
    with Receiver(mode="500") as rx:
        alerts = AlertSettings(command="sleep 60", webhook=rx.url, timeout_s=1.0)
        app = app_for(root, job, alerts, RestartPolicy(enabled=False))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("l")
            await until(pilot, lambda: "run-exited" in rx.codes(), 30)
            await until(pilot, lambda: "timed out" in timeline(app), 20)
            await until(pilot, lambda: "HTTP 500" in timeline(app), 5)
            seen = app.samples
            await until(pilot, lambda: app.samples >= seen + 3, 10)  # still sampling
        text = timeline(app)
        assert "alert run-exited via webhook failed: HTTP 500" in text
        assert "alert run-exited via command failed: timed out after 1s" in text


async def test_beside_a_live_supervisor_the_app_sends_none(root: Path, tmp_path: Path) -> None:
    """The supervisor and the app both have [alerts] to the same receiver: each crash is told
    once, by the supervisor."""
    mark = tmp_path / "second"
    job = f"if [ -e {mark} ]; then exec sleep 300; fi; touch {mark}; sleep 4; exit 1"
    with Receiver() as rx:
        on = ["run-exited", "launch-failed", "restart"]
        cfg = config(tmp_path / "cfg.toml", "retries = 3\nbackoff_s = 1.0",
                     {"webhook": rx.url, "on": on})  # fmt: skip
        fast = ("--interval", "0.5", "--start-window", "0.5", "--auto-restart", "--detach")
        res = cli("supervise", "--config", str(cfg), "--run-root", str(root), "--command", job,
                  *fast)  # fmt: skip
        assert res.returncode == 0, res.stderr
        alerts = AlertSettings(webhook=rx.url, on=tuple(on))
        policy = RestartPolicy(enabled=True, retries=3, backoff_s=0.2, max_backoff_s=1.0)
        app = app_for(root, job, alerts, policy)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: record(root).get("pid") is not None, 10)
            await pilot.press("l")
            await until(pilot, lambda: len(run_dirs(root)) == 2, 30)
            await until(pilot, lambda: sorted(rx.codes()) == ["restart", "run-exited"], 20)
            await pilot.pause(3.0)  # the app's samples saw the crash too: it stays quiet
        assert sorted(rx.codes()) == ["restart", "run-exited"], rx.codes()
        assert {b["alert"]["source"] for b in rx.bodies} == {"supervisor"}
        assert app.alerts.hosts[0].runs.end_alerted is not None  # the app did see the crash


async def test_an_unreachable_host_is_told_even_beside_a_live_supervisor(tmp_path: Path) -> None:
    """A supervisor on the host that went away cannot tell of it (its last record only looks
    live from here): the app sends host-unreachable; the rest stays the supervisor's."""
    import asyncio
    import logging
    import time

    from dflash_tui.app.host.alerts import HostAlerts
    from dflash_tui.app.host.sample import SampleReady
    from dflash_tui.app.host.state import make_hosts
    from dflash_tui.core.alerts.events import Said
    from dflash_tui.core.base.snapshot import Snapshot
    from dflash_tui.core.diagnosis.tracker import Tracker

    now = time.time()
    doc = {"pid": 4242, "host": "gpu-box", "heartbeat_at": now, "heartbeat_s": 2.0}
    snap = Snapshot.from_dict({"time": now, "supervisor": doc})
    assert snap is not None and snap.supervisor is not None
    tracker = Tracker(HostConfig().topology)
    diag = tracker.add(snap)
    (state,) = make_hosts(Config(hosts=(HostConfig(run_root=str(tmp_path)),)), [None])
    state.last = SampleReady(state.key, snap, diag, tracker.progress, (), ())
    with Receiver() as rx:
        on = ("host-unreachable", "run-exited")
        h = HostAlerts(state, AlertSettings(webhook=rx.url, on=on), logging.getLogger("t"),
                       lambda _data: None)  # fmt: skip
        h.say(Said("run-exited", "error", "the run exited"))  # the supervisor's to tell
        h.say(Said("host-unreachable", "error", "local unreachable: connection lost"))
        deadline = time.monotonic() + 10
        while not rx.codes() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert rx.codes() == ["host-unreachable"]
