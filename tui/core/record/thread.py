"""One thread that does the flight recorders' work for many hosts, away from the caller.

The app folds every host's sample on its event loop. What a recorder then does with it
(encode, compress, write, and at a segment's end fsync and thin the oldest segments down to
the cap) is disk work, which may stall on a slow or network disk, and it is the one part of
a sample that nothing on screen waits for. So the app hands each sample over here: one thread
for every host, woken once for the samples of the next ``GATHER_S`` seconds rather than once
a sample (a hand-over per sample to a thread and back cost more than the fold at 64 hosts).
Each recorder's samples are written in the order given, and its close comes after them.

The queue holds at most ``QUEUE_MAX`` samples. Past that (a disk that stopped answering)
samples are left out of the record, never queued without bound: the recorder's log says so
when it starts, and how many once the queue takes its samples again. A recorder that raises
is said on its log and the thread goes on with the others.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.timeline import Event
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.record.recorder import Recorder

QUEUE_MAX = 1024  # samples waiting: 16 s of 64 hosts at 1 Hz
GATHER_S = 0.2  # after a wake-up, the samples of this long are written together


class RecordThread:
    """``add`` a host's sample for its recorder; ``close`` a recorder after its samples;
    ``stop`` once every host is closed. The thread starts with the first job."""

    def __init__(self, cap: int = QUEUE_MAX, gather_s: float = GATHER_S) -> None:
        self.cap, self.gather_s = cap, gather_s
        self._jobs: deque[Callable[[], None]] = deque()
        self._samples = 0  # of the jobs, how many are samples (closes are never refused)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._missed: dict[Recorder, int] = {}  # samples left out since the queue was full
        self._failed: set[Recorder] = set()  # recorders whose add raised (said once each)

    def add(
        self, recorder: Recorder, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event]
    ) -> bool:
        """Queue one sample; False when it is left out (the queue is full, or stopped)."""
        with self._lock:
            if self._stopping:
                return False
            full = self._samples >= self.cap
            if not full:
                self._samples += 1
                self._jobs.append(lambda: self._record(recorder, snap, diag, events))
                first = len(self._jobs) == 1
        if full:
            self._miss(recorder)
            return False
        missed = self._missed.pop(recorder, 0)
        if missed:
            recorder.log.warning(
                "recording of %s caught up: %d samples before this one were left out",
                recorder.host.label, missed,
            )  # fmt: skip
        if first:
            self._start()
            self._wake.set()
        return True

    def close(self, recorder: Recorder) -> Future[None]:
        """End ``recorder``'s segment and give its record dir up, after the samples queued
        for it; the future is done then."""
        done: Future[None] = Future()

        def job() -> None:
            try:
                recorder.close()
                recorder.release()
            finally:
                done.set_result(None)

        with self._lock:
            thread = self._thread
            gone = self._stopping and (thread is None or not thread.is_alive())
            if not gone:
                self._jobs.append(job)
        if gone:  # nothing runs jobs any more: close it here
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
            return True
        self._wake.set()
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def queued(self) -> int:
        """Samples waiting to be written."""
        return self._samples

    def _miss(self, recorder: Recorder) -> None:
        n = self._missed.get(recorder, 0) + 1
        self._missed[recorder] = n
        if n == 1:
            recorder.log.warning(
                "recording of %s is behind (%d samples wait for the disk): samples are left "
                "out until it catches up", recorder.host.label, self.cap,
            )  # fmt: skip

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
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
                stopping = self._stopping
            for job in jobs:
                job()
            if stopping:
                with self._lock:
                    if not self._jobs:
                        return
                self._wake.set()

    def _record(
        self, recorder: Recorder, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event]
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
