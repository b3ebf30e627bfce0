"""The app's side of run control: calls tui/core/control.py, control_kill.py and
control_restart.py and turns their Progress into the wait bar's steps and their results into
one line for the user.

Everything destructive goes through control, which verifies identities on the machine (the
run's PGID against its recorded start time; a single process against its start time) right
before it signals anything. Cancelling sets an event that control checks between waits, so a
cancelled kill says what it already did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tui.core.config import HostConfig
from tui.core.rundir import Decision, RestartPolicy
from tui.core.transport import Transport, TransportError

StepFn = Callable[..., None]  # step(text, done=None, total=None)


class ControlError(RuntimeError):
    """A control action failed; the message is for the user."""


class Bridge:
    grace = 10.0  # seconds between SIGTERM and SIGKILL
    start_window = 3.0  # a job must stay up this long to count as started
    release_timeout = 60.0  # seconds to wait for the old run's GPU memory on restart
    supervise_poll = 2.0  # seconds between auto-restart's looks at the run (tests: less)

    def __init__(self, transport: Transport, host: HostConfig) -> None:
        self.transport, self.host = transport, host
        self.cancel = asyncio.Event()

    def request_cancel(self) -> None:
        self.cancel.set()

    @staticmethod
    def _progress(step: StepFn) -> Callable[[Any], None]:
        def on_progress(p: Any) -> None:
            step(p.message, p.elapsed, p.limit)

        return on_progress

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        self.cancel = asyncio.Event()
        try:
            return await fn(self.transport, self.host, *args, cancel=self.cancel, **kw)
        except TransportError as exc:
            raise ControlError(f"{self.host.label} unreachable: {exc}") from None
        except RuntimeError as exc:  # tui.core.control.ControlError and friends
            raise ControlError(str(exc)) from None

    async def launch(self, step: StepFn) -> str:
        from tui.core import control

        step(f"launching: {self.host.command}")
        res = await self._call(
            control.launch,
            start_window=self.start_window,
            keep=self.host.keep_runs,
            progress=self._progress(step),
        )
        return _outcome(res.ok, res.message, res.log_tail)

    async def kill(self, step: StepFn, run_id: str | None = None) -> str:
        """Kill ``run_id`` (the run the confirm dialog named), never a newer one."""
        from tui.core import control_kill

        step(f"SIGTERM to the run's group; SIGKILL after {self.grace:.0f}s")
        res = await self._call(
            control_kill.kill, grace=self.grace, run_id=run_id, progress=self._progress(step)
        )
        if res.gpu_note:
            return _outcome(res.ok, f"{res.message} ({res.gpu_note})")
        return _outcome(res.ok, res.message)

    async def restart(self, step: StepFn, run_id: str | None = None) -> str:
        from tui.core import control_restart

        step("restart: stopping the run")
        res = await self._call(
            control_restart.restart,
            grace=self.grace,
            start_window=self.start_window,
            release_timeout=self.release_timeout,
            keep=self.host.keep_runs,
            progress=self._progress(step),
            run_id=run_id,
        )
        return _outcome(res.ok, res.message)

    async def supervise(
        self,
        policy: RestartPolicy,
        stop: asyncio.Event,
        on_decision: Callable[[Decision], None],
        on_launch: Callable[[Any], None],
    ) -> Decision | None:
        """Auto-restart: watch the run and relaunch it after a crash until ``stop`` is set or
        the policy gives up (the FATAL decision is returned)."""
        from tui.core.control_restart import supervise

        return await supervise(
            self.transport,
            self.host,
            policy,
            stop,
            on_decision=on_decision,
            on_launch=on_launch,
            start_window=self.start_window,
            keep=self.host.keep_runs,
            poll=self.supervise_poll,
        )

    async def kill_process(self, pid: int, start_ticks: int | None, step: StepFn) -> str:
        from tui.core.control_pid import kill_process

        if start_ticks is None:
            raise ControlError(f"PID {pid}: its start time is unknown, so it cannot be verified")
        step(f"SIGTERM to PID {pid}; SIGKILL after {self.grace:.0f}s")
        res = await self._call(
            lambda transport, _host, **kw: kill_process(transport, **kw),
            pid=pid,
            start_ticks=start_ticks,
            grace=self.grace,
            progress=self._progress(step),
        )
        return _outcome(res.ok, res.message)


def _outcome(ok: bool, message: str, log_tail: tuple[str, ...] = ()) -> str:
    if ok:
        return message
    tail = "; ".join(x for x in log_tail[-3:] if x.strip())
    raise ControlError(message + (f" (log: {tail})" if tail else ""))
