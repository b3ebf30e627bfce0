"""One thread that does the flight recorders' work for many hosts, away from the caller.

The app folds every host's sample on its event loop. What a recorder then does with it
(encode, compress, write, and at a segment's end fsync and thin the oldest segments down to
the cap) is disk work, which may stall on a slow or network disk, and it is the one part of
a sample that nothing on screen waits for. So the app hands each sample over here: one thread
for every host, woken once for the samples of the next ``GATHER_S`` seconds rather than once
a sample (a hand-over per sample to a thread and back cost more than the fold at 64 hosts).
Each recorder's samples are written in the order given, and its close comes after them.

The queue is capped twice: at ``QUEUE_MAX`` samples and at ``QUEUE_WEIGHT``, a sample weighing
the characters of its log lines (up to megabytes, held until written) and ``SAMPLE_WEIGHT``.
Once it is full (a disk that stopped answering) samples are left out of the record, never
queued without bound, until the queue is down to half. The recorder's log says when it starts
leaving a host's samples out, and how many once it takes them again (or at its close); a disk
a little slower than the samples fills the queue again and again, so a later time is said
only ``SAY_EVERY_S`` after the last, its samples counted into the next word. A job that
raises (a recorder's bug, a close that fails) is said on that recorder's log; the thread goes
on with the others. Once a recorder's close is queued, its samples are refused.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.record.recorder import Recorder

QUEUE_MAX = 1024  # samples waiting: 16 s of 64 hosts at 1 Hz
QUEUE_WEIGHT = 64 << 20  # their weight (``_weight``)
SAMPLE_WEIGHT = 16 << 10  # about what a sample's records hold besides its log lines
GATHER_S = 0.2  # after a wake-up, the samples of this long are written together
SAY_EVERY_S = 300.0  # a host's queue filling again within this is not said again


@dataclass
class _Lag:
    """One host's samples left out: how many not yet said, whether they are being left out
    now, whether that time was said ("behind"), and when "behind" was last said."""

    missed: int = 0
    refusing: bool = False
    told: bool = False
    said_at: float = -SAY_EVERY_S


def _weight(snap: Snapshot) -> int:
    """What a queued sample holds, roughly: its log lines and a share for the rest."""
    return SAMPLE_WEIGHT + sum(len(line) for log in snap.logs for line in log.lines)


class RecordThread:
    """``add`` a host's sample for its recorder; ``close`` a recorder after its samples;
    ``stop`` once every host is closed. The thread starts with the first job."""

    def __init__(
        self, cap: int = QUEUE_MAX, cap_weight: int = QUEUE_WEIGHT, gather_s: float = GATHER_S
    ) -> None:
        self.cap, self.cap_weight, self.gather_s = cap, cap_weight, gather_s
        self._jobs: deque[Callable[[], None]] = deque()
        self._samples = 0  # samples queued or being written (closes are never refused)
        self._weight = 0  # their weight
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._ended = False  # the thread has run its last job: nothing runs jobs any more
        self._full = False  # leaving samples out until the queue is down to half
        self._lags: dict[Recorder, _Lag] = {}  # the hosts whose samples were left out
        self._closing: set[Recorder] = set()  # whose close is queued: no sample after it
        self._failed: set[Recorder] = set()  # recorders whose add raised (said once each)

    def add(
        self, recorder: Recorder, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event]
    ) -> bool:
        """Queue one sample; False when it is left out (the queue is full, or stopped)."""
        weight = _weight(snap)
        with self._lock:
            if self._stopping or recorder in self._closing:
                return False
            if self._full and 2 * self._samples <= self.cap and 2 * self._weight <= self.cap_weight:
                self._full = False
            over = self._samples >= self.cap or self._weight + weight > self.cap_weight
            self._full = self._full or (over and self._samples > 0)
            if not self._full:
                self._samples += 1
                self._weight += weight
                self._jobs.append(lambda: self._record(recorder, snap, diag, events, weight))
                first = len(self._jobs) == 1
            full = self._full
        if full:
            self._miss(recorder)
            return False
        lag = self._lags.get(recorder)
        if lag is not None:
            lag.refusing = False
            if lag.told:
                self._say_missed(recorder, "takes samples again")
        if first:
            self._start()
            self._wake.set()
        return True

    def close(self, recorder: Recorder) -> Future[None]:
        """End ``recorder``'s segment and give its record dir up, after the samples queued
        for it; the future is done then (cancelled by a waiter that gave up: the close
        still runs)."""
        done: Future[None] = Future()
        self._say_missed(recorder, "closed")

        def job() -> None:
            try:
                recorder.close()
                recorder.release()
            except Exception as exc:  # the other hosts' jobs run all the same
                recorder.log.warning(
                    "closing the record of %s failed: %r", recorder.host.label, exc
                )
            finally:
                with contextlib.suppress(InvalidStateError):  # its waiter gave up
                    done.set_result(None)

        with self._lock:
            self._closing.add(recorder)
            ended = self._ended
            if not ended:
                self._jobs.append(job)
        if ended:  # nothing runs jobs any more: close it here
            job()
            return done
        self._start()
        self._wake.set()
        return done

    def stop(self, timeout: float) -> bool:
        """Write what is queued and end the thread; False if it did not end within
        ``timeout`` seconds (a disk that hangs: the thread is a daemon, it dies with us)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
            if thread is None:
                self._ended = True
                return True
        self._wake.set()
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def queued(self) -> int:
        """Samples waiting to be written."""
        return self._samples

    def _miss(self, recorder: Recorder) -> None:
        lag = self._lags.setdefault(recorder, _Lag())
        lag.missed += 1
        if lag.refusing:
            return  # this time was said (or not) at its first sample left out
        lag.refusing = True
        now = time.monotonic()
        if now - lag.said_at >= SAY_EVERY_S:
            lag.said_at, lag.told = now, True
            recorder.log.warning(
                "recording of %s is behind: the record queue is full, its samples are left "
                "out until it is down to half", recorder.host.label,
            )  # fmt: skip

    def _say_missed(self, recorder: Recorder, now: str) -> None:
        """How many of ``recorder``'s samples were left out since last said, if any."""
        lag = self._lags.get(recorder)
        if lag is None or not lag.missed:
            return
        recorder.log.warning(
            "recording of %s %s: %d samples before this were left out",
            recorder.host.label, now, lag.missed,
        )  # fmt: skip
        lag.missed, lag.told = 0, False

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._ended:
                return
            self._thread = threading.Thread(target=self._run, name="dflash-record", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._stopping:
                time.sleep(self.gather_s)  # one wake-up for the samples of the next moment
            with self._lock:
                jobs, self._jobs = self._jobs, deque()
                self._wake.clear()
            for job in jobs:
                job()  # each catches what it raises: one host's never ends the others'
            with self._lock:
                if self._stopping and not self._jobs:
                    self._ended = True
                    return
                if self._jobs:
                    self._wake.set()

    def _record(
        self,
        recorder: Recorder,
        snap: Snapshot,
        diag: Diagnosis | None,
        events: Sequence[Event],
        weight: int,
    ) -> None:
        try:
            recorder.add(snap, diag, events)
        except Exception as exc:  # a bug in one host's recording never stops the others'
            if recorder not in self._failed:
                self._failed.add(recorder)
                recorder.log.warning(
                    "recording of %s failed: %r (said once: its later failures are not)",
                    recorder.host.label, exc,
                )  # fmt: skip
        finally:
            with self._lock:
                self._samples -= 1
                self._weight -= weight
