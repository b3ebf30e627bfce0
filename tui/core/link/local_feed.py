"""The feed of this machine with the probe running inside this process (the app, ``status
--watch``, ``metrics``, ``supervise``).

On this machine, outside a container and without a DFLASH_TUI_PYTHON override (``in_process``,
``feed_for``), the probe that ``Feed`` would stream from a second interpreter is the code this
process already has as ``dflash_tui.core.probe``. Here one ``Probe`` is kept for the feed's
life (its state between samples, as the streaming probe keeps it: log offsets, the process
table's cache, CPU ticks, NVML and its Xid watcher) and sampled every ``interval`` in a daemon
thread (one for the feed's life), where its dict is also parsed into a Snapshot, off the event
loop. No second Python (about 21 MiB), no JSON line encoded and decoded per sample.

What the subprocess gave for free is kept explicitly:
- a sample that blocks (a hung log mount, a wedged driver call) is given up after the feed's
  stall timeout and reported; its thread, a daemon, cannot hold the program's exit. The probe
  it holds cannot be trusted again, so the feed goes on with the subprocess probe (``Feed``),
  resuming each log where the last sample left it;
- a probe that fails (an exception) is reported as a disconnection and made again after the
  same growing backoff as a probe process that died, resuming its logs;
- a sample that does not parse is a ``Malformed`` event, as a line that does not parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.snapshot_rows import RowMemo
from dflash_tui.core.link.feed import Disconnected, Feed, FeedEvent, Malformed, snapshot_of
from dflash_tui.core.link.local_probe import failed, in_process, new_probe, probe_args
from dflash_tui.core.link.transport import Transport

T = TypeVar("T")


class Stuck(Exception):
    """A call in the probe's thread did not return within the stall timeout."""


# A call for the thread: the function, and the loop and future its outcome is set on.
_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class SampleThread:
    """One daemon thread that makes a feed's calls in turn, each awaited up to a timeout
    (``Stuck`` after it). A feed samples every interval for as long as it runs: one thread for
    its life, not one started per sample, which cost about a tenth of the app's CPU a sample
    with 8 panels (bench/README.md). A call that timed out keeps its thread, which may never
    come back: the next call is made by a new one (the feed gives a stuck probe up anyway). A
    daemon, so a hung call cannot hold the program's exit, as asyncio's default executor's
    threads would."""

    def __init__(self, name: str = "probe") -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] | None = None

    async def run(self, fn: Callable[[], T], timeout: float) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            args = (self._jobs,)
            threading.Thread(target=_serve, args=args, name=self.name, daemon=True).start()
        self._jobs.put((fn, loop, fut))
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self.close()
            raise Stuck from None
        except asyncio.CancelledError:
            self.close()  # the call may still run: a later call must not queue behind it
            raise

    def close(self) -> None:
        """The thread ends once it has made the calls it was given (a stuck one last)."""
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        fn, loop, fut = job
        try:
            result, exc = fn(), None
        except Exception as err:
            result, exc = None, err
        except BaseException as err:  # a SystemExit (argparse's) must not end the caller's loop
            result, exc = None, RuntimeError(f"{type(err).__name__}: {err}")
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (the app left)
            loop.call_soon_threadsafe(_settle, fut, result, exc)


def _settle(fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if fut.done():  # given up on (stuck or cancelled) before it finished
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


async def in_daemon_thread(fn: Callable[[], T], timeout: float, name: str = "probe") -> T:
    """``fn()`` in a daemon thread of its own; Stuck after ``timeout`` (the thread is left to
    finish or hang)."""
    thread = SampleThread(name)
    try:
        return await thread.run(fn, timeout)
    finally:
        thread.close()


class _Making:
    """A probe being made in a thread the feed may stop waiting for."""

    def __init__(self) -> None:
        self.probe: Any = None  # set by the thread once made, unless the feed stopped waiting
        self.given_up = False


class LocalFeed(Feed):
    """``Feed``'s events from a probe inside this process (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handed_over = False  # a sample hung: the feed streams from a probe process now
        self._lock = threading.Lock()
        self._busy: Any = None  # the probe a sample's thread is using
        self._orphan = False  # given up on while busy: that thread closes it when done

    def _argv(self) -> list[str]:
        return probe_args(self.host, interval=self.interval, extra=self.resume_args())

    async def events(self) -> AsyncGenerator[FeedEvent, None]:
        backoff = 1.0
        while True:
            probe, error, making = None, "the probe stopped", _Making()
            try:
                await in_daemon_thread(functools.partial(self._make, making), self.stall_timeout)
                probe = self._take(making)
                async with contextlib.aclosing(self._samples(probe)) as samples:
                    async for event in samples:
                        if isinstance(event, Snapshot):
                            backoff = 1.0
                        yield event
            except Stuck:
                if probe is None:  # stuck being made: closed once made (_make)
                    probe = self._take(making)
                if probe is not None:  # its thread closes it if the sample ever returns
                    self._release(probe)
                    probe = None
                # Closed with this generator: the probe process goes with it.
                async with contextlib.aclosing(self._fall_back()) as fallen:
                    async for other in fallen:
                        yield other
                return
            except Exception as exc:  # the probe failed, as a probe process that died
                error = failed(exc)
            finally:
                if probe is None:  # not made yet, or made as the wait ended (a cancel too)
                    probe = self._take(making)
                if probe is not None:
                    self._release(probe)
            self.connected = False
            yield Disconnected(error, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    def _make(self, making: _Making) -> None:
        """In the making's thread: a new probe for ``_take``, closed here instead if the feed
        stopped waiting for it meanwhile (a probe holds NVML's init and open files)."""
        probe = new_probe(self._argv())
        with self._lock:
            if not making.given_up:
                making.probe = probe
                return
        probe.close()

    def _take(self, making: _Making) -> Any:
        """The probe ``making`` made, handed over once; None while it is still being made
        (the feed stops waiting: its thread closes it once made)."""
        with self._lock:
            making.given_up = True
            probe, making.probe = making.probe, None
            return probe

    async def _samples(self, probe: Any) -> AsyncGenerator[Snapshot | Malformed, None]:
        """Every ``interval``, on a schedule (a slow sample restarts it: no burst after)."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        # This probe's own rows memo: a sample given up on (stuck) still finishes in its
        # thread, and must not write to the memo of whatever parses after it (the stream a
        # stuck probe hands over to, or the next probe's samples).
        memo = RowMemo()
        thread = SampleThread()
        try:
            while True:
                with self._lock:
                    self._busy = probe
                event = await thread.run(lambda: self._sample(probe, memo), self.stall_timeout)
                if isinstance(event, Snapshot):
                    self.connected = True
                    self._keep_resume(event)
                yield event
                due = max(due + self.interval, loop.time())
                await asyncio.sleep(due - loop.time())
        finally:
            thread.close()

    def _sample(self, probe: Any, memo: RowMemo) -> Snapshot | Malformed:
        """In the sample's thread. A probe given up on meanwhile (stuck, or the feed closed
        under it) is closed here once its sample is over: never under a running sample."""
        try:
            doc = probe.sample()
            return snapshot_of(lambda: Snapshot.from_dict(doc, memo))
        finally:
            with self._lock:
                self._busy, orphan, self._orphan = None, self._orphan, False
            if orphan:
                probe.close()

    def _release(self, probe: Any) -> None:
        """Close ``probe`` (in a daemon thread: NVML's shutdown is a driver call, never on the
        event loop), or have the thread still sampling with it close it after."""
        with self._lock:
            if self._busy is probe:
                self._orphan = True
                return
        threading.Thread(target=probe.close, name="probe-close", daemon=True).start()

    async def _fall_back(self) -> AsyncGenerator[FeedEvent, None]:
        """The probe hung: say so, then stream from a probe process (killable) for good."""
        self.connected, self.handed_over = False, True
        yield Disconnected(f"{self.stalled()}; sampling in a separate process from now on", 0.0)
        async with contextlib.aclosing(super().events()) as streamed:
            async for event in streamed:
                yield event


def feed_for(transport: Transport, host: HostConfig, interval: float) -> Feed:
    """The feed of ``host``: the probe inside this process where it can run here
    (``in_process``: this machine, no container, no DFLASH_TUI_PYTHON), else a probe process
    through ``transport``. The app, ``status --watch``, ``metrics`` and ``supervise`` all ask
    here."""
    return (LocalFeed if in_process(host) else Feed)(transport, host, interval)
