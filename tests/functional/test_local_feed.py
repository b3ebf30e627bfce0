"""The app's probe of this machine inside the app (core/link/local_feed.py): samples from one
probe kept between them, no probe process; a hung sample hands over to a probe process, a
failed probe is made again, and neither loses a log line nor shows one twice."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dflash_tui.app.host.source import LiveSource
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import Disconnected, Feed, FeedEvent
from dflash_tui.core.link.local_feed import (
    LocalFeed,
    SampleThread,
    Stuck,
    feed_for,
    in_daemon_thread,
)
from dflash_tui.core.link.local_probe import new_probe
from dflash_tui.core.link.transport import LocalTransport
from dflash_tui.core.probe import main as probe_main
from dflash_tui.core.probe.nvhealth import NvHealth

WAIT_S = 60  # a bound for what takes well under a second on an idle machine


def probes() -> list[str]:
    """The command lines of this process's children that are probes (``python3 - --once`` or
    ``--interval=S``; an earlier test's stand-in nvidia-smi may still be running)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        argv = cmd.split(b"\0")
        probe = b"-" in argv[1:3] and any(a.startswith((b"--interval=", b"--once")) for a in argv)
        if probe and int(stat.rsplit(")", 1)[1].split()[1]) == me:
            out.append(cmd.replace(b"\0", b" ").decode(errors="replace"))
    return out


async def take(events: AsyncIterator[FeedEvent], n: int) -> list[FeedEvent]:
    return [await asyncio.wait_for(anext(events), WAIT_S) for _ in range(n)]


def lines(events: list[FeedEvent]) -> list[str]:
    return [ln for ev in events if isinstance(ev, Snapshot) for log in ev.logs for ln in log.lines]


def closes(monkeypatch: pytest.MonkeyPatch, host: HostConfig) -> list[int]:
    """Counts the closes of ``host``'s probes (an earlier test's sample thread may still end
    and close its own): the list holds their number once there is one."""
    close, count = probe_main.Probe.close, []

    def counted(self: Any) -> None:
        if host.logs[0] in self.args.log:
            count[:] = [count[0] + 1 if count else 1]
        close(self)

    monkeypatch.setattr(probe_main.Probe, "close", counted)
    return count


@pytest.fixture
def host(tmp_path: Path) -> HostConfig:
    (tmp_path / "train.log").write_text("line 0\n")
    return HostConfig(run_root=str(tmp_path / "runs"), logs=(str(tmp_path / "train.log"),))


def append(host: HostConfig, text: str) -> None:
    with open(host.logs[0], "a") as f:
        f.write(text)


async def test_samples_come_from_one_probe_in_this_process(fake_smi: Any, host: HostConfig) -> None:
    fake_smi.nvml()  # the fake pynvml, imported by this process (the fixture's sys.path)
    assert LiveSource(LocalTransport(), host, 0.1).local
    feed = LocalFeed(LocalTransport(), host, interval=0.1)
    events = feed.events()
    try:
        got = await take(events, 2)
        append(host, "line 1\nline 2\n")
        got += await take(events, 3)
        assert not probes(), probes()
    finally:
        await events.aclose()
    assert all(isinstance(ev, Snapshot) for ev in got) and feed.connected
    snaps = [ev for ev in got if isinstance(ev, Snapshot)]
    assert {s.telemetry.source for s in snaps} == {"nvml"}
    assert len(snaps[0].gpus) == 8 and not fake_smi.calls()  # NVML, not nvidia-smi
    # One probe kept between samples: each line once, in order (its tail's offset kept).
    assert lines(got) == ["line 0", "line 1", "line 2"]
    assert [s.time for s in snaps] == sorted(s.time for s in snaps)


async def test_a_hung_sample_hands_over_to_a_probe_process(
    fake_smi: Any, host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A driver call that never returns (what this machine cannot do for real): the second
    # sample's GPU reading blocks until the test ends.
    release, calls = threading.Event(), [0]
    gpus = probe_main.Probe.gpus

    def wedged(self: Any, errors: list[str]) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            release.wait(WAIT_S)
        return gpus(self, errors)

    monkeypatch.setattr(probe_main.Probe, "gpus", wedged)
    closed = closes(monkeypatch, host)
    # Which rows memo each parse writes to, and from which thread: the wedged sample, given
    # up on, still parses when it returns, after the stream has begun parsing its own lines.
    parsed: list[tuple[bool, object]] = []
    from_dict = Snapshot.from_dict.__func__  # type: ignore[attr-defined]

    def spied(cls: type[Snapshot], d: dict[str, Any], memo: Any = None) -> Snapshot:
        parsed.append((threading.current_thread() is threading.main_thread(), memo))
        return from_dict(cls, d, memo)

    monkeypatch.setattr(Snapshot, "from_dict", classmethod(spied))
    source = LiveSource(LocalTransport(), host, 0.1)
    feed = source.feed
    assert isinstance(feed, LocalFeed) and source.local
    feed.stall_timeout = 1.0
    events = feed.events()
    try:
        first = await take(events, 1)
        append(host, "line 1\n")
        down = await take(events, 1)
        feed.stall_timeout = WAIT_S  # the probe process's start is not judged by the 1 s
        append(host, "line 2\n")
        after = await take(events, 2)  # from a probe process, resuming the log
        streaming = probes()
        # The refresh key goes through the probe process's way too, not the wedged probe.
        assert not source.local and isinstance(after[-1], Snapshot)
        now = await asyncio.wait_for(source.sample_now(after[-1]), WAIT_S)
        assert calls[0] == 2 and not closed  # the wedged probe is not closed under its sample
        release.set()
        for _ in range(WAIT_S * 20):  # its thread closes it once the sample is over
            if closed:
                break
            await asyncio.sleep(0.05)
    finally:
        release.set()
        await events.aclose()
    assert isinstance(down[0], Disconnected) and not isinstance(first[0], Disconnected)
    assert "the probe is stuck" in down[0].error and "separate process" in down[0].error
    assert down[0].retry_in == 0.0  # the probe process starts at once
    assert all(isinstance(ev, Snapshot) for ev in after) and streaming
    assert lines(first + after) == ["line 0", "line 1", "line 2"]
    assert len(now.gpus) == 8 and closed == [1]
    # The late sample parsed with its own probe's memo, never the stream's.
    in_threads = [memo for on_main, memo in parsed if not on_main]
    stream = {id(memo) for on_main, memo in parsed if on_main and memo is not None}
    assert in_threads and all(m is not None and id(m) not in stream for m in in_threads)


async def test_a_probe_stuck_while_made_is_closed_once_made(
    fake_smi: Any, host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NVML's init hanging (what this machine cannot do for real): the feed stops waiting and
    # streams from a probe process; the probe made after that holds NVML's init and open
    # files, so its thread closes it, and it is closed once.
    release = threading.Event()
    init = probe_main.Probe.__init__

    def slow(self: Any, args: Any) -> None:
        release.wait(WAIT_S)
        init(self, args)

    monkeypatch.setattr(probe_main.Probe, "__init__", slow)
    closed = closes(monkeypatch, host)
    feed = LocalFeed(LocalTransport(), host, interval=0.1)
    feed.stall_timeout = 1.0
    events = feed.events()
    try:
        down = await take(events, 1)
        assert isinstance(down[0], Disconnected) and "the probe is stuck" in down[0].error
        assert not closed  # still being made
        release.set()
        for _ in range(WAIT_S * 20):
            if closed:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # a second close would come now
    finally:
        release.set()
        await events.aclose()
    assert closed == [1]


async def test_a_failed_probe_is_made_again_and_resumes_its_logs(
    fake_smi: Any, host: HostConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample, calls = probe_main.Probe.sample, [0]

    def failing_once(self: Any) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("the probe broke")
        return sample(self)

    monkeypatch.setattr(probe_main.Probe, "sample", failing_once)
    closed = closes(monkeypatch, host)
    feed = LocalFeed(LocalTransport(), host, interval=0.1)
    events = feed.events()
    try:
        first = await take(events, 1)
        append(host, "line 1\n")
        down = await take(events, 1)
        after = await take(events, 1)  # after the 1 s backoff, from a new probe
        on_failure = list(closed)
    finally:
        await events.aclose()
    assert isinstance(down[0], Disconnected) and down[0].retry_in == 1.0
    assert "the probe failed: RuntimeError: the probe broke" in down[0].error
    assert isinstance(after[0], Snapshot) and lines(first + after) == ["line 0", "line 1"]
    assert on_failure == [1]  # the failed probe released its files (and NVML) before the next
    assert closed == [2]  # and the next one when the feed was closed


async def test_refresh_samples_here_without_the_streams_lines(
    fake_smi: Any, host: HostConfig
) -> None:
    source = LiveSource(LocalTransport(), host, 0.1)
    events = source.events()
    try:
        first = await take(events, 1)
        append(host, "line 1\n")
        assert isinstance(first[0], Snapshot)
        now = await asyncio.wait_for(source.sample_now(first[0]), WAIT_S)
        nxt = await take(events, 1)
    finally:
        await events.aclose()
    assert now.time > first[0].time and len(now.gpus) == 8
    assert lines([now]) == []  # the stream delivers the lines, once
    assert lines(first + nxt) == ["line 0", "line 1"]


def test_a_container_or_another_python_keeps_the_probe_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The one rule for the app (LiveSource), status --watch, metrics and supervise (feed_for).
    here, boxed = HostConfig(), HostConfig(container="docker:trainer")
    assert isinstance(LiveSource(LocalTransport(), here, 1.0).feed, LocalFeed)
    assert isinstance(feed_for(LocalTransport(), here, 1.0), LocalFeed)
    remote = HostConfig(address="gpu-box")
    for host in (boxed, remote):
        assert type(feed_for(LocalTransport(), host, 1.0)) is Feed
    assert type(LiveSource(LocalTransport(), boxed, 1.0).feed) is Feed
    monkeypatch.setenv("DFLASH_TUI_PYTHON", "python3")
    assert type(LiveSource(LocalTransport(), here, 1.0).feed) is Feed
    assert type(feed_for(LocalTransport(), here, 1.0)) is Feed


async def test_a_system_exit_in_the_thread_is_an_error_not_an_exit() -> None:
    def leave() -> None:
        raise SystemExit(2)  # argparse's way with a bad argument

    with pytest.raises(RuntimeError, match="SystemExit: 2"):
        await in_daemon_thread(leave, WAIT_S)


async def test_one_thread_makes_every_sample_and_a_stuck_one_is_left_behind() -> None:
    """A feed's calls are made by one daemon thread in turn, not a thread each; a call past
    its timeout is Stuck and keeps that thread, and the next call is made by a new one (so is
    the call after one whose caller was cancelled); once closed, the thread ends after its
    last call."""
    thread = SampleThread("probe-test")
    seen = [await thread.run(threading.current_thread, WAIT_S) for _ in range(5)]
    first = seen[0]
    assert all(t is first for t in seen) and first is not threading.current_thread()
    assert first.daemon and first.name == "probe-test"
    release = threading.Event()
    with pytest.raises(Stuck):
        await thread.run(lambda: release.wait(WAIT_S), 0.2)
    second = await thread.run(threading.current_thread, WAIT_S)
    assert second is not first and first.is_alive()  # the stuck call still holds the first
    release.set()
    await asyncio.to_thread(first.join, WAIT_S)
    assert not first.is_alive()  # it ended after its call: it was given nothing more
    with pytest.raises(ZeroDivisionError):
        await thread.run(lambda: 1 // 0, WAIT_S)  # a call's exception is the caller's
    assert await thread.run(threading.current_thread, WAIT_S) is second
    # A call whose caller is cancelled may still run: the next call does not queue behind it.
    release_too = threading.Event()
    waiting = asyncio.create_task(thread.run(lambda: release_too.wait(WAIT_S), WAIT_S))
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    third = await thread.run(threading.current_thread, 5.0)
    assert third is not second
    release_too.set()
    thread.close()
    for t in (second, third):
        await asyncio.to_thread(t.join, WAIT_S)
        assert not t.is_alive()


def nvml_frees(monkeypatch: pytest.MonkeyPatch, nv: Any) -> list[str]:
    """Records the probe's calls that free NVML (the fake pynvml's, counted)."""
    freed: list[str] = []
    for name in ("nvmlEventSetFree", "nvmlShutdown"):
        real = getattr(nv, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            freed.append(_name)
            return _real(*args)

        monkeypatch.setattr(nv, name, counted)
    return freed


def test_close_frees_nvml_unless_a_call_of_it_is_wedged(
    fake_smi: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi.nvml()
    argv = ["--interval=1", f"--run-root={tmp_path}", "--smi-timeout=0.5"]
    probe = new_probe(argv)
    freed = nvml_frees(monkeypatch, probe.nvml.nv)
    probe.sample()
    probe.close()  # a streaming probe holds an event set and one init: both given back
    assert freed == ["nvmlEventSetFree", "nvmlShutdown"]

    # The health read wedged in the driver (what this machine cannot do for real): the probe
    # goes on without it, and its close must not free what the wedged call is using.
    release = threading.Event()
    monkeypatch.setattr(NvHealth, "read", lambda self, errors: release.wait(WAIT_S))
    probe = new_probe(argv)
    freed = nvml_frees(monkeypatch, probe.nvml.nv)
    try:
        doc = probe.sample()
        assert doc["machine"]["nvml"] is None and probe.nvml_stuck is not None
        assert probe.sample()["telemetry"]["source"] == "nvidia-smi"  # NVML is left alone
        probe.close()
        assert freed == []
    finally:
        release.set()
