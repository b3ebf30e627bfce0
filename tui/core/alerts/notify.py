"""Sending alerts: a command hook and a webhook, each under a total deadline, and ``Alerter``,
which filters (``on``), rate-limits (``limit.RateLimiter``) and sends in the background.

A notifier that fails, returns an HTTP error or hangs is cut off after ``timeout_s`` and logged
(the supervisor's log says which and why); it never holds up or stops supervision, sampling or
another notifier:

- every notifier has a lane of its own (``Lane``: a bounded queue and one task), so a stuck
  webhook delays only its own later alerts, each by at most its deadline, and never the
  command hook; an alert arriving at a full lane is dropped with a note in the log;
- a webhook is sent on threads of its own (``SendSlots``: at most two, never asyncio's default
  executor, which the app diagnoses samples on), by ``http_post.post`` under a total deadline
  (connect + send + the answer's head); a send that outlasts it anyway (a name lookup that
  hangs) keeps its thread, and while both are held the next send is dropped with a note:
  threads stay bounded whatever a receiver does.

The command runs where the supervisor runs, under ``sh -c`` in a session of its own (so a hung
one is killed as its own process group, by the PID we started, never by a name), with the
alert as JSON on stdin and ``DFLASH_ALERT_*`` in its environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from dflash_tui import __version__
from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.limit import RateLimiter
from dflash_tui.core.base.alert_config import AlertSettings
from dflash_tui.core.base.local_proc import end_session

TailFn = Callable[[Alert], Awaitable[tuple[str, ...]]]
T = TypeVar("T")
SEND_THREADS = 2  # a webhook's threads: one sending, one left by a send that overran
LANE_SIZE = 20  # alerts waiting for one notifier; more are dropped with a note


class NotifyError(RuntimeError):
    """A notifier could not deliver; the message says why (for the log)."""


class Notifier(Protocol):
    name: str

    async def send(self, alert: Alert) -> None: ...


class CommandNotifier:
    def __init__(self, command: str, timeout: float) -> None:
        self.command, self.timeout, self.name = command, timeout, "command"

    async def send(self, alert: Alert) -> None:
        proc = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **alert.env()},
            start_new_session=True,
        )
        data = json.dumps(alert.to_json()).encode() + b"\n"
        try:
            _, err = await asyncio.wait_for(proc.communicate(data), self.timeout)
        except asyncio.TimeoutError:
            await end_session(proc)
            raise NotifyError(f"timed out after {self.timeout:g}s (killed)") from None
        except asyncio.CancelledError:
            # Abandoned (the app or the supervisor leaving once its drain is over): nothing
            # would hold the command to its timeout or reap it, so its group ends now, as on a
            # timeout.
            await end_session(proc)
            raise
        if proc.returncode:
            tail = err.decode("utf-8", "replace").strip()[-300:] or "no error text"
            raise NotifyError(f"exit {proc.returncode}: {tail}")


class SendSlots:
    """A notifier's own threads, at most ``size``; a send while all are busy is refused
    (``NotifyError``) rather than queued. A slot is free only when its thread has returned,
    not when the caller stopped waiting: an abandoned send still counts."""

    def __init__(self, size: int = SEND_THREADS, name: str = "dflash-alert") -> None:
        self.size, self.name = size, name
        self.busy = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            if self.busy >= self.size:
                raise NotifyError(f"dropped: {self.busy} earlier sends are still running")
            self.busy += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.size, thread_name_prefix=self.name)
            pool = self._pool
        fut = pool.submit(fn, *args)
        fut.add_done_callback(self._free)
        return await asyncio.wrap_future(fut)

    def _free(self, _: object) -> None:
        with self._lock:
            self.busy -= 1


class WebhookNotifier:
    def __init__(self, url: str, timeout: float, topic: str | None = None) -> None:
        self.url, self.timeout, self.topic, self.name = url, timeout, topic, "webhook"
        self.slots = SendSlots()

    def _post(self, body: bytes) -> None:
        from dflash_tui.core.alerts.http_post import PostError, post

        headers = {"Content-Type": "application/json", "User-Agent": f"dflash-tui/{__version__}"}
        try:
            post(self.url, body, headers, self.timeout)
        except PostError as exc:
            raise NotifyError(str(exc)) from None

    async def send(self, alert: Alert) -> None:
        body = json.dumps(alert.webhook_body(self.topic)).encode()
        await self.slots.run(self._post, body)


def notifiers_for(settings: AlertSettings) -> list[Notifier]:
    out: list[Notifier] = []
    if settings.command:
        out.append(CommandNotifier(settings.command, settings.timeout_s))
    if settings.webhook:
        out.append(WebhookNotifier(settings.webhook, settings.timeout_s, settings.topic))
    return out


class Lane:
    """One notifier's alerts, sent in order by one task, each under the notifier's deadline;
    at most ``LANE_SIZE`` wait (one more is dropped with a note in the log)."""

    def __init__(self, notifier: Notifier, alerter: Alerter, size: int = LANE_SIZE) -> None:
        self.notifier, self.alerter = notifier, alerter
        self.queue: asyncio.Queue[Alert] = asyncio.Queue(maxsize=size)
        self.task = asyncio.create_task(self._run())

    def put(self, alert: Alert) -> None:
        try:
            self.queue.put_nowait(alert)
        except asyncio.QueueFull:
            self.alerter.failed += 1
            self.alerter.log.warning(
                "alert %s via %s dropped: %d alerts are waiting for it",
                alert.code, self.notifier.name, self.queue.qsize(),
            )  # fmt: skip

    async def _run(self) -> None:
        while True:
            alert = await self.queue.get()
            try:
                await self.alerter.send_one(self.notifier, alert)
            finally:
                self.queue.task_done()


class Alerter:
    """``offer`` an alert; what passes the filter and the rate limit is sent in the background
    (with the run's log tail from ``tail``, fetched only for alerts that are sent), one lane
    per notifier."""

    def __init__(
        self,
        settings: AlertSettings,
        log: logging.Logger,
        tail: TailFn | None = None,
        notifiers: Sequence[Notifier] | None = None,
    ) -> None:
        self.settings, self.log, self.tail = settings, log, tail
        self.limiter = RateLimiter(settings.interval)
        self.notifiers = list(notifiers) if notifiers is not None else notifiers_for(settings)
        self._queue: asyncio.Queue[Alert] | None = None
        self._task: asyncio.Task[None] | None = None
        self._lanes: list[Lane] = []
        self.sent = self.failed = 0

    def wants(self, code: str) -> bool:
        return bool(self.notifiers) and code in self.settings.on

    def offer(self, alert: Alert, now: float) -> bool:
        """True when the alert is on its way (False: not wanted, held back, or after FATAL)."""
        if not self.wants(alert.code):
            return False
        out = self.limiter.offer(alert, now)
        if out is None:
            why = "after FATAL" if self.limiter.closed else "rate limit"
            self.log.info("alert %s not sent (%s): %s", alert.code, why, alert.message)
            return False
        self._put(out)
        return True

    def tick(self, now: float) -> None:
        """Send the summaries that are due (call it every cycle)."""
        for alert in self.limiter.due(now):
            if self.wants(alert.code):
                self._put(alert)

    def _put(self, alert: Alert) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=200)
            self._lanes = [Lane(n, self) for n in self.notifiers]
            self._task = asyncio.create_task(self._run(self._queue))
        try:
            self._queue.put_nowait(alert)
        except asyncio.QueueFull:
            self.log.warning("alert %s dropped: 200 alerts are waiting to be sent", alert.code)

    async def _run(self, queue: asyncio.Queue[Alert]) -> None:
        """Each alert with its log tail, handed to every notifier's lane."""
        while True:
            alert = await queue.get()
            try:
                alert = await self._with_tail(alert)
                for lane in self._lanes:
                    lane.put(alert)
            finally:
                queue.task_done()

    async def _with_tail(self, alert: Alert) -> Alert:
        if self.tail is None or self.settings.log_lines <= 0 or alert.log_tail:
            return alert
        try:
            return alert.with_tail(
                await asyncio.wait_for(self.tail(alert), self.settings.timeout_s)
            )
        except Exception as exc:  # the alert goes out without its tail
            self.log.warning("alert %s: no log tail: %s", alert.code, exc or type(exc).__name__)
            return alert

    async def send_one(self, notifier: Notifier, alert: Alert) -> None:
        limit = self.settings.timeout_s
        try:
            await asyncio.wait_for(notifier.send(alert), limit + 1.0)
        except asyncio.TimeoutError:
            self.failed += 1
            self.log.warning("alert %s via %s failed: timed out after %gs", alert.code,
                             notifier.name, limit)  # fmt: skip
        except Exception as exc:  # NotifyError, and anything a notifier did not foresee
            self.failed += 1
            self.log.warning("alert %s via %s failed: %s", alert.code, notifier.name, exc)
        else:
            self.sent += 1
            self.log.info("alert %s sent via %s: %s", alert.code, notifier.name, alert.message)

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) for what is queued to be sent, e.g. before the supervisor exits."""
        if self._queue is None:
            return

        async def all_sent() -> None:
            assert self._queue is not None
            await self._queue.join()
            for lane in self._lanes:
                await lane.queue.join()

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(all_sent(), timeout)

    async def close(self, timeout: float = 0.0) -> None:
        await self.drain(timeout)
        tasks = [t for t in [self._task, *(lane.task for lane in self._lanes)] if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self._task, self._lanes, self._queue = None, [], None
