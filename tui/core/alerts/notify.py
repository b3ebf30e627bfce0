"""Sending alerts: a command hook and a webhook, each under a timeout, and ``Alerter``, which
filters (``on``), rate-limits (``limit.RateLimiter``) and sends in a background task.

A notifier that fails, returns an HTTP error or hangs is cut off after ``timeout_s`` and logged
(the supervisor's log says which and why); it never holds up or stops supervision. The command
runs where the supervisor runs, under ``sh -c`` in a session of its own (so a hung one is
killed as its own process group, by the PID we started, never by a name), with the alert as
JSON on stdin and ``DFLASH_ALERT_*`` in its environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from dflash_tui import __version__
from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.alerts.limit import RateLimiter
from dflash_tui.core.base.alert_config import AlertSettings

TailFn = Callable[[Alert], Awaitable[tuple[str, ...]]]


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
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group we started, by its PID
            await proc.wait()
            raise NotifyError(f"timed out after {self.timeout:g}s (killed)") from None
        if proc.returncode:
            tail = err.decode("utf-8", "replace").strip()[-300:] or "no error text"
            raise NotifyError(f"exit {proc.returncode}: {tail}")


class WebhookNotifier:
    def __init__(self, url: str, timeout: float, topic: str | None = None) -> None:
        self.url, self.timeout, self.topic, self.name = url, timeout, topic, "webhook"

    def _post(self, body: bytes) -> None:
        # Imported on the first webhook, not with the app: urllib and http.client bring email
        # and more (about 2 MiB of RSS) that a session without a webhook never uses.
        import http.client
        import urllib.error
        import urllib.request

        req = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": f"dflash-tui/{__version__}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                resp.read(65536)
        except urllib.error.HTTPError as exc:
            raise NotifyError(f"HTTP {exc.code} {exc.reason}") from None
        except TimeoutError:
            raise NotifyError(f"timed out after {self.timeout:g}s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise NotifyError(f"timed out after {self.timeout:g}s") from None
            raise NotifyError(f"cannot reach {self.url}: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:  # incl. socket timeouts
            raise NotifyError(f"{type(exc).__name__}: {exc}") from None

    async def send(self, alert: Alert) -> None:
        body = json.dumps(alert.webhook_body(self.topic)).encode()
        await asyncio.to_thread(self._post, body)


def notifiers_for(settings: AlertSettings) -> list[Notifier]:
    out: list[Notifier] = []
    if settings.command:
        out.append(CommandNotifier(settings.command, settings.timeout_s))
    if settings.webhook:
        out.append(WebhookNotifier(settings.webhook, settings.timeout_s, settings.topic))
    return out


class Alerter:
    """``offer`` an alert; what passes the filter and the rate limit is sent in the background
    (with the run's log tail from ``tail``, fetched only for alerts that are sent)."""

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
            self._task = asyncio.create_task(self._run(self._queue))
        try:
            self._queue.put_nowait(alert)
        except asyncio.QueueFull:
            self.log.warning("alert %s dropped: 200 alerts are waiting to be sent", alert.code)

    async def _run(self, queue: asyncio.Queue[Alert]) -> None:
        while True:
            alert = await queue.get()
            try:
                await self._deliver(alert)
            finally:
                queue.task_done()

    async def _deliver(self, alert: Alert) -> None:
        if self.tail is not None and self.settings.log_lines > 0 and not alert.log_tail:
            try:
                alert = alert.with_tail(await self.tail(alert))
            except Exception as exc:  # the alert goes out without its tail
                self.log.warning("alert %s: no log tail: %s", alert.code, exc)
        await asyncio.gather(*(self._one(n, alert) for n in self.notifiers))

    async def _one(self, notifier: Notifier, alert: Alert) -> None:
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
        if self._queue is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout)

    async def close(self, timeout: float = 0.0) -> None:
        await self.drain(timeout)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
