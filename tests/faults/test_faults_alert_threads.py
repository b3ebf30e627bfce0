"""Alerts against a receiver that trickles (a real HTTP receiver on 127.0.0.1, in a process of
its own so that only our threads are counted): each send ends within its deadline, the
alerter's threads stay bounded after 20 alerts, never on asyncio's default executor, a stuck
webhook never holds up a command hook beside it, and a good receiver still gets later alerts;
a command hook abandoned mid-send leaves no process behind.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from receiver import Receiver, receiver_process
from supervise_util import hook, hook_alerts
from support import live_group

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.notify import (
    SEND_THREADS,
    Alerter,
    CommandNotifier,
    NotifyError,
    WebhookNotifier,
)
from dflash_tui.core.base.alert_config import AlertSettings

DEADLINE_S = 1.0  # a send's deadline in the test of single sends


@pytest.fixture
def trickler(request: pytest.FixtureRequest) -> Iterator[str]:
    """A receiver process in ``request.param`` mode (default ``trickle``), a byte every 0.1 s
    (no per-read timeout fires); its URL."""
    with receiver_process(getattr(request, "param", "trickle"), 120, 0.1) as url:
        yield url


def alert(i: int, code: str = "restart") -> Alert:
    return Alert(code, "warning", f"crash {i}", "gpu-a", time.time(), f"run-{i}")


def ours() -> int:
    return threading.active_count()


def default_executor_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")]


@pytest.mark.parametrize(
    ("trickler", "delivered"), [("trickle", False), ("trickle-body", True)], indirect=["trickler"]
)
async def test_each_send_ends_within_its_deadline(trickler: str, delivered: bool) -> None:
    """A head that never ends fails at the deadline; a body that trickles after a whole head
    is a delivered alert (the status is all a send needs)."""
    notifier = WebhookNotifier(trickler, timeout=DEADLINE_S)
    for i in range(3):
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(notifier.send(alert(i)), 10.0)
            ok = True
        except NotifyError as exc:
            assert "timed out after 1s" in str(exc)
            ok = False
        took = time.monotonic() - t0
        print(f"send {i}: {'delivered' if ok else 'timed out'} in {took:.2f}s")
        # Bounded by the deadline (the receiver trickles for 120 s), with room for a loaded
        # machine's scheduling: a hung send is far beyond this.
        assert took < DEADLINE_S + 3.0 and ok == delivered
    assert notifier.slots.busy == 0  # every thread came back


async def test_twenty_alerts_to_a_trickler_keep_threads_bounded(
    trickler: str, tmp_path: Path
) -> None:
    """20 alerts at once to a webhook that trickles, with a command hook beside it: the hook
    gets all 20 at once; the webhook lane fails each at its deadline; the threads never grow
    past the webhook's own two, and none is asyncio's default executor's."""
    out = tmp_path / "hook"
    settings = AlertSettings(
        command=hook(out), webhook=trickler, on=("restart",), min_interval_s=0.0,
        timeout_s=0.6, log_lines=0,
    )  # fmt: skip
    log = logging.getLogger("test.alerts.bounded")
    alerter = Alerter(settings, log)
    base, peak = ours(), 0
    t0 = time.monotonic()
    for i in range(20):
        assert alerter.offer(alert(i), time.time())
    hooked_at = None
    while alerter.failed < 20 and time.monotonic() - t0 < 30:
        peak = max(peak, ours())
        if hooked_at is None and len(hook_alerts(out)) == 20:
            hooked_at = time.monotonic() - t0
        await asyncio.sleep(0.05)
    took = time.monotonic() - t0
    await alerter.close(0)
    print(f"threads: {base} before, peak {peak}, {ours()} after; hook done in {hooked_at}s; "
          f"webhook lane done in {took:.1f}s")  # fmt: skip
    assert alerter.failed == 20 and alerter.sent == 20  # the hook's 20 went out
    # Never behind the stuck webhook, whose lane takes 20 x 0.6 = 12 s; the hook's 20 runs of
    # a shell are given 8 s, room for a loaded machine.
    assert hooked_at is not None and hooked_at < 8.0
    assert peak <= base + SEND_THREADS + 1  # +1: asyncio's watcher of the hook's child
    assert default_executor_threads() == []


async def test_a_good_receiver_gets_alerts_after_a_trickler_wedged_the_sends(
    trickler: str,
) -> None:
    """Six alerts stuck on a trickling webhook (a long deadline): a second alerter, to a good
    receiver, still delivers at once; the first one drops what its lane cannot hold."""
    log = logging.getLogger("test.alerts.good")
    stuck = Alerter(AlertSettings(webhook=trickler, on=("restart",), min_interval_s=0.0,
                                  timeout_s=30.0, log_lines=0), log)  # fmt: skip
    for i in range(6):
        stuck.offer(alert(i), time.time())
    await asyncio.sleep(0.5)
    with Receiver() as rx:
        good = Alerter(AlertSettings(webhook=rx.url, on=("restart",), min_interval_s=0.0,
                                     timeout_s=2.0, log_lines=0), log)  # fmt: skip
        t0 = time.monotonic()
        good.offer(alert(7), time.time())
        while not rx.codes() and time.monotonic() - t0 < 5:
            await asyncio.sleep(0.05)
        took = time.monotonic() - t0
        await good.close(2.0)
    await stuck.close(0)
    assert rx.codes() == ["restart"] and took < 2.0, took
    assert good.sent == 1


async def test_the_app_folds_samples_while_alerts_are_stuck(trickler: str, tmp_path: Path) -> None:
    """In the app, eight alerts to the trickling webhook (more than asyncio's default executor
    has threads on a small machine): samples are folded all along, none two seconds late."""
    from support import until

    from dflash_tui.app.app import DflashApp
    from dflash_tui.core.base.config_types import Config, HostConfig
    from dflash_tui.core.base.timings import RestartPolicy
    from dflash_tui.core.control.policy import Decision

    settings = AlertSettings(webhook=trickler, on=("restart",), min_interval_s=0.0,
                             timeout_s=0.5, log_lines=0)  # fmt: skip
    host = HostConfig(command="sleep 300", run_root=str(tmp_path / "runs"),
                      restart=RestartPolicy(enabled=False))  # fmt: skip
    app = DflashApp(Config(hosts=(host,), interval=0.3, alerts=settings))
    # Threads an earlier test left (an abandoned send runs on to its own deadline) are not ours.
    earlier = {t.ident for t in threading.enumerate()}
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: app.samples >= 2, 20)
        state = app.host_states[0]
        for i in range(8):
            app.alerts.decision(state, Decision("restart", f"crash {i}"))
        counts = []
        for _ in range(8):  # 16 s: the eight sends, one after another, each at its deadline
            seen = app.samples
            await pilot.pause(2.0)
            counts.append(app.samples - seen)
        remote = app.alerts.hosts[0].remote
        assert remote is not None
        # Each send ends at its deadline; on a loaded machine the last may end after the window.
        await until(pilot, lambda: remote.failed >= 8, 20)
        failed = remote.failed
        senders = [
            t.name
            for t in threading.enumerate()
            if t.name.startswith("dflash-alert") and t.ident not in earlier
        ]
        total = threading.active_count()
    print(f"samples folded per 2 s while 8 alerts were stuck: {counts}; {failed} sends failed; "
          f"threads: {total} in all, {len(senders)} sending alerts")  # fmt: skip
    assert min(counts) >= 2, counts
    assert failed == 8 and len(senders) <= SEND_THREADS


def test_a_supervisor_with_a_trickling_webhook_keeps_supervising(
    trickler: str, tmp_path: Path
) -> None:
    """``supervise`` with a webhook that trickles and a command hook beside it, over a crash
    loop: it reaches FATAL on time, the hook gets every alert, the webhook fails each at its
    deadline, and the supervisor's threads stay few."""
    from supervise_util import cleanup, cli, config, record, wait_for

    root, out = tmp_path / "runs", tmp_path / "hook"
    cfg = config(tmp_path / "cfg.toml", "retries = 2\nbackoff_s = 0.2\nmax_backoff_s = 0.5",
                 {"command": hook(out), "webhook": trickler, "on": ["restart", "fatal"],
                  "min_interval_s": 0, "timeout_s": 1})  # fmt: skip
    opts = ("--config", str(cfg), "--run-root", str(root), "--command", "exit 1",
            "--interval", "0.5", "--start-window", "0.5")  # fmt: skip
    try:
        assert cli("supervise", *opts, "--auto-restart", "--detach").returncode == 0
        pid = record(root)["pid"]
        t0 = time.monotonic()
        cli("launch", *opts)
        peak = 0

        def fatal() -> bool:
            nonlocal peak
            status = Path(f"/proc/{pid}/status").read_text()
            peak = max(peak, int(status.split("Threads:")[1].split()[0]))
            return (record(root).get("last_decision") or {}).get("action") == "fatal"

        wait_for(fatal, 40, "FATAL")
        took = time.monotonic() - t0
        wait_for(lambda: [a["code"] for a in hook_alerts(out)][-1:] == ["fatal"], 10, "hook")
        wait_for(lambda: record(root).get("alerts_failed", 0) >= 3, 15, "the webhook timed out")
        log = (root / "supervisor.log").read_text()
    finally:
        cleanup(root)
    print(f"FATAL after {took:.1f}s; supervisor threads at most {peak}")
    assert [a["code"] for a in hook_alerts(out)] == ["restart", "restart", "fatal"]
    assert "via webhook failed: timed out after 1s" in log
    assert peak <= 10, peak


def test_a_webhook_goes_through_the_environments_http_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As urllib did: with ``http_proxy`` set, an http:// webhook is sent to the proxy (here
    a real receiver on 127.0.0.1 standing in for it); the receiver's own name is never
    looked up (``.invalid`` has none)."""
    from dflash_tui.core.alerts.http_post import post

    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with Receiver() as rx:
        monkeypatch.setenv("http_proxy", rx.url.rsplit("/", 1)[0])
        code = post("http://hooks.invalid:8080/x", b'{"alert": {"code": "restart"}}', {}, 5.0)
    assert code == 200 and rx.codes() == ["restart"]


async def test_a_command_hook_abandoned_mid_send_leaves_no_process(tmp_path: Path) -> None:
    """A send cancelled while its hook runs (an app or supervisor leaving past its drain): the
    hook's whole group is killed and reaped then, and its transport closed, not left to the
    collector (which kills only ``sh``, and raises once the loop is closed)."""
    pid_file = tmp_path / "hook.pid"
    # sh stays the group's leader with a child of its own (no exec): killing sh alone would
    # leave the sleep running in the group.
    notifier = CommandNotifier(f"echo $$ >{pid_file}; sleep 300; :", timeout=60.0)
    task = asyncio.create_task(notifier.send(alert(0)))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    group = int(pid_file.read_text())
    deadline = time.monotonic() + 10.0
    while len(live_group(group)) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # sh writes its PID before it starts the sleep
    assert len(live_group(group)) == 2  # the hook's sh and its sleep
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        gc.collect()
    # Nothing of the group runs on (the sleep, whose parent was sh, may wait a moment as a
    # zombie for init to reap it).
    deadline = time.monotonic() + 10.0
    while live_group(group) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert live_group(group) == []
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert unclosed == []
