"""The record thread (tui/core/record/thread.py): every host's samples written in the order
given, a recorder's close after its samples, a full queue leaving samples out and saying so
(and how many once it takes them again), a recorder that raises said once while the others
go on, and nothing queued or lost at the stop."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from dflash_tui.app import scenes
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.record.recorder import Recorder
from dflash_tui.core.record.replay import load
from dflash_tui.core.record.thread import RecordThread

WAIT_S = 10.0


def until(ok: Callable[[], bool]) -> bool:
    end = time.monotonic() + WAIT_S
    while not ok():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def _host(tmp_path: Path, name: str, samples: int) -> tuple[HostConfig, list[Snapshot], Path]:
    run = tmp_path / name / "run"
    run.mkdir(parents=True)
    snaps = [
        replace(s, run=replace(s.run, dir=str(run))) if s.run else s
        for s in scenes.healthy_run(samples=samples)
    ]
    return HostConfig(run_root=str(tmp_path / name), name=name), snaps, run / "record"


def _given(thread: RecordThread, rec: Recorder, snaps: Sequence[Snapshot]) -> list[bool]:
    """Each sample handed to ``thread`` for ``rec`` (no diagnosis, no events): taken or not."""
    return [thread.add(rec, s, None, ()) for s in snaps]


def _log(name: str) -> tuple[logging.Logger, list[str]]:
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    log = logging.getLogger(f"test.record_thread.{name}.{id(said)}")
    log.propagate, log.handlers = False, [Keep()]
    log.setLevel(logging.INFO)
    return log, said


class Gated(Recorder):
    """A recorder whose writes wait for ``gate`` (a disk that stopped answering)."""

    gate: threading.Event

    def add(
        self, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event] | None = None
    ) -> None:
        assert self.gate.wait(WAIT_S)
        super().add(snap, diag, events)


class SlowClose(Recorder):
    """A recorder whose close takes a while, waiting on ``gate`` when it has one."""

    gate: threading.Event | None = None
    ended = False

    def close(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(WAIT_S)
        time.sleep(0.1)
        super().close()
        self.ended = True


class Broken(Recorder):
    def add(
        self, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event] | None = None
    ) -> None:
        raise KeyError("a bug in recording")


def test_two_hosts_samples_are_written_in_order_and_closed_after_them(tmp_path: Path) -> None:
    thread = RecordThread(gather_s=0.01)
    hosts = [_host(tmp_path, name, 12) for name in ("a", "b")]
    recorders = [Recorder(cfg, RecordSettings(), "test") for cfg, _, _ in hosts]
    trackers = [Tracker(cfg.topology) for cfg, _, _ in hosts]
    for k in range(12):  # interleaved, as two hosts' samples come
        for (_, snaps, _), rec, tracker in zip(hosts, recorders, trackers, strict=True):
            assert thread.add(rec, snaps[k], tracker.add(snaps[k]), ())
    closed = [thread.close(rec) for rec in recorders]
    for done in closed:
        done.result(WAIT_S)
    assert thread.stop(WAIT_S) and thread.queued == 0
    for (_, snaps, where), rec in zip(hosts, recorders, strict=True):
        assert rec.samples == 12 and rec.seg is None  # every sample, then the close
        assert [s.snap.time for s in load(where).samples] == [s.time for s in snaps]
        assert not (where / ".writer").exists()  # released


def test_a_full_queue_leaves_samples_out_and_says_how_many(tmp_path: Path) -> None:
    cfg, snaps, where = _host(tmp_path, "slow", 20)
    log, said = _log("slow")
    rec = Gated(cfg, RecordSettings(), "test", log)
    rec.gate = threading.Event()
    thread = RecordThread(cap=4, gather_s=0.0)
    taken = _given(thread, rec, snaps[:10])
    # Four wait (the one the thread took counts until written): the rest are left out.
    assert taken == [True] * 4 + [False] * 6, taken
    assert len(said) == 1 and "is behind" in said[0], said  # said once, not per sample
    rec.gate.set()
    assert until(lambda: thread.queued == 0)
    assert thread.add(rec, snaps[10], None, ())
    assert said[1:] == [
        "recording of slow takes samples again: 6 samples before this were left out"
    ]
    assert thread.add(rec, snaps[11], None, ()) and len(said) == 2  # said once, not again
    thread.close(rec).result(WAIT_S)
    assert thread.stop(WAIT_S)
    kept = [s.snap.time for s in load(where).samples]
    assert len(kept) == 6 == rec.samples
    assert kept == sorted(kept) and kept[-1] == snaps[11].time


def test_a_recorder_that_raises_is_said_once_and_the_others_go_on(tmp_path: Path) -> None:
    log, said = _log("broken")
    (bad_cfg, bad_snaps, _), (cfg, snaps, where) = (
        _host(tmp_path, "bad", 5),
        _host(tmp_path, "good", 5),
    )
    bad, good = Broken(bad_cfg, RecordSettings(), "test", log), Recorder(cfg, RecordSettings(), "t")
    thread = RecordThread(gather_s=0.0)
    for k in range(5):
        assert thread.add(bad, bad_snaps[k], None, ()) and thread.add(good, snaps[k], None, ())
    thread.close(good).result(WAIT_S)
    assert thread.stop(WAIT_S)
    assert said == ["recording of bad failed: KeyError('a bug in recording') (said once: its "
                    "later failures are not)"]  # fmt: skip
    assert len(load(where).samples) == good.samples == 5


def test_the_stop_writes_what_is_queued_and_nothing_is_taken_after(tmp_path: Path) -> None:
    cfg, snaps, where = _host(tmp_path, "h", 8)
    rec = Recorder(cfg, RecordSettings(), "test")
    before = threading.active_count()
    thread = RecordThread(gather_s=0.5)  # the samples still wait for their gathering
    assert threading.active_count() == before  # no thread before there is work
    assert all(_given(thread, rec, snaps[:6]))
    assert threading.active_count() == before + 1  # one thread, started by the first sample
    assert thread.stop(WAIT_S) and rec.samples == 6 and thread.queued == 0
    assert not thread.add(rec, snaps[6], None, ())  # stopped: refused, not queued forever
    done = thread.close(rec)  # nothing runs jobs now: closed at once, here
    assert done.done() and rec.seg is None
    assert len(load(where).samples) == 6


@pytest.mark.parametrize("cap", [1, 3])
def test_the_queue_never_holds_more_than_its_cap(tmp_path: Path, cap: int) -> None:
    cfg, snaps, _ = _host(tmp_path, f"cap{cap}", 10)
    rec = Gated(cfg, RecordSettings(), "test")
    rec.gate = threading.Event()
    thread = RecordThread(cap=cap, gather_s=1.0)  # nothing is written while this runs
    taken = _given(thread, rec, snaps)
    assert taken.count(True) == cap == thread.queued
    rec.gate.set()
    assert thread.stop(WAIT_S) and thread.queued == 0 and rec.samples == cap


def test_a_close_is_done_only_once_it_ran(tmp_path: Path) -> None:
    cfg, snaps, where = _host(tmp_path, "h", 3)
    rec = SlowClose(cfg, RecordSettings(), "test")
    thread = RecordThread(gather_s=0.0)
    assert all(_given(thread, rec, snaps))
    thread.close(rec).result(WAIT_S)
    assert rec.ended and rec.seg is None  # the future says done after the close, not before
    assert thread.stop(WAIT_S) and len(load(where).samples) == 3


def test_a_waiter_that_gives_up_on_a_close_leaves_the_thread_running(tmp_path: Path) -> None:
    """The exit waits a bounded time for a close (a disk that hangs); the close that ends
    after its waiter gave up must not end the thread: the other hosts' jobs still run."""
    (slow_cfg, slow_snaps, _), (cfg, snaps, where) = (
        _host(tmp_path, "s", 2),
        _host(tmp_path, "g", 4),
    )
    slow = SlowClose(slow_cfg, RecordSettings(), "test")
    slow.gate = threading.Event()
    good = Recorder(cfg, RecordSettings(), "test")
    thread = RecordThread(gather_s=0.0)
    assert thread.add(slow, slow_snaps[0], None, ())
    waited = thread.close(slow)
    assert all(_given(thread, good, snaps))
    closed = thread.close(good)
    assert waited.cancel()  # the waiter's deadline passed while the close waits on the disk
    slow.gate.set()
    closed.result(WAIT_S)
    assert slow.ended and good.seg is None and len(load(where).samples) == 4
    assert thread.stop(WAIT_S)


def test_the_samples_of_a_moment_are_written_together(tmp_path: Path) -> None:
    cfg, snaps, _ = _host(tmp_path, "h", 5)
    rec = Recorder(cfg, RecordSettings(), "test")
    thread = RecordThread(gather_s=1.0)
    assert all(_given(thread, rec, snaps))
    time.sleep(0.3)
    assert rec.samples == 0  # the thread woke for the first and waits for the rest
    assert until(lambda: rec.samples == 5)
    assert thread.stop(WAIT_S)


def test_log_lines_count_against_the_queue_and_what_was_left_out_is_said_at_the_close(
    tmp_path: Path,
) -> None:
    """A sample's log lines are held until written: a queue of few samples with megabytes
    of lines is full. Samples left out and never followed by one taken are said at the
    close."""
    cfg, snaps, _ = _host(tmp_path, "big", 6)
    log, said = _log("big")
    rec = Gated(cfg, RecordSettings(), "test", log)
    rec.gate = threading.Event()
    big = [
        replace(s, logs=tuple(replace(lg, lines=("x" * 1000,) * 1000) for lg in s.logs))
        for s in snaps
    ]
    assert sum(len(lg.lines) for lg in big[0].logs) > 0
    thread = RecordThread(cap=100, cap_weight=3 << 20, gather_s=0.0)
    taken = _given(thread, rec, big)
    assert taken[0] and taken.count(True) < len(big), taken  # far below 100 samples
    thread.close(rec)
    left = taken.count(False)
    assert said == [
        "recording of big is behind: the record queue is full, its samples are left out "
        "until it is down to half",
        f"recording of big closed: {left} samples before this were left out",
    ]
    rec.gate.set()
    assert thread.stop(WAIT_S) and rec.samples == taken.count(True)


def test_a_queue_that_fills_again_soon_is_not_said_again_and_no_sample_after_a_close(
    tmp_path: Path,
) -> None:
    """A disk a little slower than the samples fills the queue time after time: the second
    time within SAY_EVERY_S is not said, its samples counted into the next word (here the
    close's). A sample given after its recorder's close was queued is refused."""
    cfg, snaps, _ = _host(tmp_path, "again", 12)
    log, said = _log("again")
    rec = Gated(cfg, RecordSettings(), "test", log)
    thread = RecordThread(cap=2, gather_s=0.0)
    for episode in range(2):
        rec.gate = threading.Event()
        base = episode * 6
        taken = _given(thread, rec, snaps[base : base + 5])
        assert taken == [True, True, False, False, False], taken
        rec.gate.set()
        assert until(lambda: thread.queued == 0)
        assert thread.add(rec, snaps[base + 5], None, ())
        assert until(lambda: thread.queued == 0)
    thread.close(rec).result(WAIT_S)
    assert not thread.add(rec, snaps[-1], None, ())  # closed: refused, not a segment reopened
    assert said == [
        "recording of again is behind: the record queue is full, its samples are left out "
        "until it is down to half",
        "recording of again takes samples again: 3 samples before this were left out",
        "recording of again closed: 3 samples before this were left out",
    ]
    assert thread.stop(WAIT_S)
