"""The supervisor of a job across hosts (``dflash-tui supervise --host JOB``).

It holds the supervisor lock of every member's run root (no single-host supervisor restarts
a member behind its back) and each cycle reads every member's latest run. A job whose members
are not all alive is broken: the ranks left wait in collectives that never complete, so the
members still alive are killed at once (within the kill grace). If a member's run ended on its
own, not with a success code and not on request, and auto-restart is on, the whole job is
launched again with ``--resume auto`` (config_job.resumed), once per failure, after the
policy's backoff and up to its retries. Each set of runs is handled once: no run is doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from dflash_tui.core.base.config_types import HostConfig, JobConfig
from dflash_tui.core.base.rundir import ALIVE_STATES, RunReport
from dflash_tui.core.base.timings import KILL_GRACE_S, START_WINDOW_S, RestartPolicy
from dflash_tui.core.control import supervisor_files as files
from dflash_tui.core.control.job import launch_job, members_of
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.script import ControlError, fetch_run
from dflash_tui.core.control.supervisor_loop import LockLost, SupervisorLoop
from dflash_tui.core.control.supervisor_state import policy_json
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.transport import Transport, TransportError

T = TypeVar("T")
TAKEOVER_S = 60.0  # a lock held from another machine, silent this long, is taken


class JobSupervisor(SupervisorLoop):
    name = "job supervisor"

    def __init__(
        self,
        job: JobConfig,
        hosts: Sequence[HostConfig],
        policy: RestartPolicy,
        log: logging.Logger,
        *,
        poll: float = 2.0,
        start_window: float = START_WINDOW_S,
        keep: int = 0,
        grace: float = KILL_GRACE_S,
    ) -> None:
        super().__init__(log, poll, TAKEOVER_S)
        self.job, self.policy = job, policy
        self.members = members_of(job, hosts)
        self.start_window, self.keep, self.grace = start_window, keep, grace
        self.transports = {h.label: make_transport(h) for h in self.members}
        self.locked: list[HostConfig] = []
        self.handled: set[tuple[str | None, ...]] = set()
        # run sets seen whole, and when first (monotonic): the crash count's reset
        self.seen_alive: dict[tuple[str | None, ...], float] = {}
        self.restarts = self.failures = 0
        self.states: dict[str, str] = {}

    async def _each(self, act: Callable[[Transport, HostConfig], Awaitable[T]]) -> list[T | str]:
        async def one(h: HostConfig) -> T | str:
            try:
                return await act(self.transports[h.label], h)
            except (ControlError, TransportError) as exc:
                return f"{h.label}: {exc}"

        return list(await asyncio.gather(*(one(h) for h in self.members)))

    # -- the locks and the records --

    def record(self, host: HostConfig, stopped: bool = False) -> dict[str, Any]:
        return {
            "schema": 1,
            **self.owner(),
            "heartbeat_at": time.time(),
            "heartbeat_s": self.poll,
            "mode": "daemon",
            "target": host.label,
            "run_root": host.run_root,
            "job": {
                "name": self.job.name,
                "members": list(self.job.members),
                "states": self.states,
            },
            "policy": policy_json(self.policy),
            "restarts": self.restarts,
            "failures": self.failures,
            "stopped_at": time.time() if stopped else None,
            "stop_reason": self.stop_reason if stopped else None,
            **self.state_json(),
        }

    async def _lock(self, t: Transport, h: HostConfig) -> None:
        await self.lock_root(t, h, "stop it first")
        self.locked.append(h)

    async def acquire(self) -> None:
        """Every member's supervisor lock, or none (SupervisorBusy names who holds one)."""
        for h in self.members:
            try:
                await self._lock(self.transports[h.label], h)
            except (ControlError, TransportError):
                await self.release()
                raise
        self.log.info(
            "supervising job %s on %s (PID %d, auto-restart %s)",
            self.job.name,
            ", ".join(self.job.members),
            self.pid,
            "on" if self.policy.enabled else "off",
        )

    async def beat(self) -> None:
        """Every member's record; LockLost when any member's lock was taken over (the job
        is then another supervisor's, every member of it)."""

        async def one(t: Transport, h: HostConfig) -> LockLost | None:
            try:
                await self.beat_root(t, h, self.record(h))
            except LockLost as exc:
                return exc
            return None

        said = await self._each(one)
        for s in said:
            if isinstance(s, LockLost):
                raise s
            if isinstance(s, str):
                self.log.warning("heartbeat not written: %s", s)

    async def release(self) -> None:
        for h in self.locked:
            with contextlib.suppress(ControlError, TransportError):
                await files.release(
                    self.transports[h.label], h.run_root, self.token, self.record(h, True)
                )
        self.locked = []

    async def close(self) -> None:
        for t in self.transports.values():
            await t.close()

    # -- one cycle --

    async def cycle(self) -> str:
        reps = await self._each(lambda t, h: fetch_run(t, h.run_root))
        if any(isinstance(r, str) for r in reps):
            said = "; ".join(r for r in reps if isinstance(r, str))
            self.log.warning("cannot read the job's runs: %s", said)
            return f"watch: {said}"
        runs: list[RunReport] = [r for r in reps if not isinstance(r, str)]
        states = [r.state(self.start_window) for r in runs]
        self.states = {h.label: s for h, s in zip(self.members, states, strict=True)}
        ids = tuple(r.record.id if r.record else None for r in runs)
        alive = [s in ALIVE_STATES for s in states]
        if all(alive):
            self._healthy(ids)
        if all(alive) or None in ids or ids in self.handled:
            await self.beat()
            return "watch"
        self.handled.add(ids)
        # A job that ended whole while nobody supervised it is left alone (as single-host).
        restart = any(alive) or ids in self.seen_alive
        await self.beat()  # the lock is still ours (and the states on record) before acting
        said = await self._broken(runs, states, alive, restart)
        await self.beat()
        return said

    def _healthy(self, ids: tuple[str | None, ...]) -> None:
        """The job is whole: up ``stable_s`` since first seen so, its crash count starts again."""
        now = time.monotonic()
        self.seen_alive.setdefault(ids, now)
        if self.failures and now - self.seen_alive[ids] >= self.policy.stable_s:
            self.log.info(
                "job %s up %gs: the crash count starts again", self.job.name, self.policy.stable_s
            )
            self.failures = 0

    async def _broken(
        self, runs: list[RunReport], states: list[str], alive: list[bool], restart: bool
    ) -> str:
        """Some member's run ended: stop the others; relaunch the job after a crash."""
        ended = [(h, r) for h, r, a in zip(self.members, runs, alive, strict=True) if not a]
        words = ", ".join(
            f"{h.label} run {r.record.id if r.record else '?'} {s}"
            for (h, r), s in zip(
                ended, [s for s, a in zip(states, alive, strict=True) if not a], strict=True
            )
        )
        live = [h for h, a in zip(self.members, alive, strict=True) if a]
        if live:
            self.log.warning(
                "job %s broken (%s): stopping %s",
                self.job.name,
                words,
                ", ".join(h.label for h in live),
            )
            await asyncio.gather(
                *(
                    kill_latest(self.transports[h.label], h, grace=self.grace, check_gpu=False)
                    for h in live
                )
            )
        crashed = [
            (h, r)
            for h, r in ended
            if r.record is not None
            and r.record.kill_requested_at is None
            and r.record.exit_code not in self.policy.success_codes
        ]
        if not crashed or not restart:
            return f"stopped: {words}"
        if not self.policy.enabled:
            return f"crashed: {words} (auto-restart off)"
        if self.failures >= self.policy.retries:
            if self.gave_up is None:
                rec = crashed[0][1].record
                self.give_up(self.restarts, rec.id if rec is not None else None, words)
            self.log.error(
                "job %s: FATAL after %d restarts (%s)", self.job.name, self.restarts, words
            )
            return f"fatal: {words}"
        self.failures += 1
        await asyncio.sleep(self.policy.backoff(self.failures))
        await self.beat()  # no relaunch by a supervisor that lost the job in the backoff
        res = await launch_job(
            self.job,
            self.members,
            start_window=self.start_window,
            keep=self.keep,
            resume=True,
            grace=self.grace,
        )
        self.restarts += 1
        self.log.info("job %s relaunched after %s: %s", self.job.name, words, res.message)
        self.event("restart", f"job {self.job.name} relaunched after {words}: {res.message}")
        return f"restart: {res.message}"

    def cycled(self, result: object) -> None:
        if result != "watch":
            self.log.info("decision: %s", result)
