"""The app's side of run control: calls tui/core/control/ (launch, kill, restart, the one-PID
kill, auto-restart) and turns their ActionProgress into the wait bar's steps and their results into
one line for the user.

Everything destructive goes through control, which verifies identities on the machine (the
run's PGID against its recorded start time; a single process against its start time) right
before it signals anything. Cancelling sets an event that control checks between waits, so a
cancelled kill says what it already did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from dflash_tui.core.base.config_types import HostConfig, JobConfig
from dflash_tui.core.base.snapshot import Proc
from dflash_tui.core.base.timings import (
    KILL_GRACE_S,
    RELEASE_TIMEOUT_S,
    START_WINDOW_S,
    RestartPolicy,
)
from dflash_tui.core.control.policy import AutoRestart, Decision
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.link.transport import Transport, TransportError

T = TypeVar("T")
StepFn = Callable[..., None]  # step(text, done=None, total=None)
Job = Callable[[StepFn], Awaitable[str]]  # one control action, reporting through step


class Bridge:
    grace = KILL_GRACE_S
    start_window = START_WINDOW_S
    release_timeout = RELEASE_TIMEOUT_S
    supervise_poll = 2.0  # seconds between auto-restart's looks at the run (tests: less)

    def __init__(
        self,
        transport: Transport,
        host: HostConfig,
        job: tuple[JobConfig, tuple[HostConfig, ...]] | None = None,
    ) -> None:
        self.transport, self.host, self.job = transport, host, job
        self.cancel = asyncio.Event()

    async def _on_job(self, verb: str, step: StepFn) -> str:
        """launch | kill | restart on every member of this host's job (control/job.py)."""
        from dflash_tui.core.control import job as control_job

        assert self.job is not None
        job, members = self.job
        step(f"{verb}: job {job.name} on {', '.join(job.members)}")
        progress = self._progress(step)
        if verb == "kill":
            res = await control_job.kill_job(job, members, grace=self.grace, progress=progress)
        elif verb == "restart":
            res = await control_job.restart_job(
                job,
                members,
                grace=self.grace,
                start_window=self.start_window,
                release_timeout=self.release_timeout,
                keep=self.host.keep_runs,
                progress=progress,
            )
        else:
            res = await control_job.launch_job(
                job,
                members,
                start_window=self.start_window,
                keep=self.host.keep_runs,
                progress=progress,
                grace=self.grace,
            )
        return outcome(res.ok, "; ".join((res.message, *res.warnings)))

    def request_cancel(self) -> None:
        self.cancel.set()

    @staticmethod
    def _progress(step: StepFn) -> Callable[[Any], None]:
        def on_progress(p: Any) -> None:
            step(p.message, p.elapsed, p.limit)

        return on_progress

    async def _reach(self, call: Awaitable[T]) -> T:
        """``call``'s answer; a link that fails is said as the host being unreachable."""
        try:
            return await call
        except TransportError as exc:
            raise ControlError(f"{self.host.label} unreachable: {exc}") from None

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        self.cancel = asyncio.Event()
        try:
            return await self._reach(fn(self.transport, self.host, *args, cancel=self.cancel, **kw))
        except ControlError:
            raise
        except RuntimeError as exc:  # any other failure of an action, said in one line
            raise ControlError(str(exc)) from None

    async def launch(self, step: StepFn) -> str:
        # Looked up at call time, so a test may stand in for the module's function.
        from dflash_tui.core.control import launch as control

        if self.job is not None:
            return await self._on_job("launch", step)
        step(f"launching: {self.host.command}")
        res = await self._call(
            control.launch,
            start_window=self.start_window,
            keep=self.host.keep_runs,
            progress=self._progress(step),
        )
        return outcome(res.ok, res.message, res.log_tail)

    async def kill(self, step: StepFn, run_id: str) -> str:
        """Kill ``run_id`` (the run the confirm dialog named), never another one."""
        from dflash_tui.core.control import kill as control_kill

        if self.job is not None:  # a job's members stop together (their ranks would hang)
            return await self._on_job("kill", step)
        step(f"SIGTERM to the run's group; SIGKILL after {self.grace:.0f}s")
        res = await self._call(
            control_kill.kill, grace=self.grace, run_id=run_id, progress=self._progress(step)
        )
        if res.gpu_note:
            return outcome(res.ok, f"{res.message} ({res.gpu_note})")
        return outcome(res.ok, res.message)

    async def kill_targets(self, run_id: str) -> tuple[Proc, ...]:
        """Every process a kill of ``run_id`` signals, as control.sh sees them on the host right
        now: the run's group and the processes that left it (found by the run's marker)."""
        from dflash_tui.core.control.script import fetch_run

        rep = await self._reach(fetch_run(self.transport, self.host.run_root, run_id))
        return rep.members

    async def restart(self, step: StepFn, run_id: str | None) -> str:
        """Restart ``run_id`` (None: the host had no run; a launch while it still has none)."""
        from dflash_tui.core.control import restart as control_restart

        if self.job is not None:
            return await self._on_job("restart", step)
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
        return outcome(res.ok, res.message)

    async def supervise(
        self,
        policy: RestartPolicy,
        stop: asyncio.Event,
        on_decision: Callable[[Decision], None],
        on_launch: Callable[[Any], None],
        machine: AutoRestart | None = None,
    ) -> Decision | None:
        """Auto-restart: watch the run and relaunch it after a crash until ``stop`` is set or
        the policy gives up (the FATAL decision is returned); ``machine``: the policy's state
        to go on from."""
        from dflash_tui.core.control.restart import supervise

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
            machine=machine,
        )

    async def request_supervisor_policy(self, enabled: bool) -> None:
        """Ask the headless supervisor of this run root to turn its auto-restart on or off."""
        import os
        import socket
        import time

        from dflash_tui.core.control.supervisor_files import request_policy

        by = f"dflash-tui app PID {os.getpid()} on {socket.gethostname()}"
        await self._reach(
            request_policy(self.transport, self.host.run_root, enabled, by, time.time())
        )

    async def kill_process(
        self, pid: int, start_ticks: int | None, step: StepFn, signal: str = "TERM"
    ) -> str:
        """``signal`` from the process menu (TERM, INT, KILL, USR1: core/control/pid.py)."""
        from dflash_tui.core.control.pid import kill_process

        if start_ticks is None:
            raise ControlError(f"PID {pid}: its start time is unknown, so it cannot be verified")
        then = f"; SIGKILL after {self.grace:.0f}s" if signal == "TERM" else ""
        step(f"SIG{signal} to PID {pid}{then}")
        res = await self._call(
            lambda transport, _host, **kw: kill_process(transport, **kw),
            pid=pid,
            start_ticks=start_ticks,
            grace=self.grace,
            progress=self._progress(step),
            signal=signal,
        )
        return outcome(res.ok, res.message)

    async def host_tools(self) -> dict[str, str]:
        """The process menu's helpers on the host's PATH (py-spy), name -> path."""
        from dflash_tui.core.control.pyspy import host_tools

        return await self._reach(host_tools(self.transport))

    async def dump_process(self, pid: int, start_ticks: int | None) -> tuple[str, tuple[str, ...]]:
        """py-spy dump of ``pid`` once verified: (what happened, py-spy's lines)."""
        from dflash_tui.core.control.pyspy import dump

        if start_ticks is None:
            raise ControlError(f"PID {pid}: its start time is unknown, so it cannot be verified")
        res = await self._reach(dump(self.transport, pid=pid, start_ticks=start_ticks))
        if not res.ok and not res.lines:
            raise ControlError(res.message)
        return res.message, res.lines


def outcome(ok: bool, message: str, log_tail: tuple[str, ...] = ()) -> str:
    if ok:
        return message
    tail = "; ".join(x for x in log_tail[-3:] if x.strip())
    raise ControlError(message + (f" (log: {tail})" if tail else ""))
