"""What every headless supervisor does around its decisions, the host's (``Supervisor``) and
the job's (``JobSupervisor``) alike: take the run root's lock (breaking a stale one), cycle
every ``poll`` seconds, beat (rewrite ``supervisor.json`` while the lock is still ours), stop
at once when the lock was taken over (``LockLost``), and release the lock with a last record.

One skeleton, so that the two cannot drift: a supervisor that lost its lock to another one must
not launch or kill anything more, whichever kind it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from dflash_tui import __version__
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.local_proc import start_ticks
from dflash_tui.core.base.supervision import HISTORY_MAX, Fatal, SupervisorEvent
from dflash_tui.core.control import supervisor_files as files
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.control.supervisor_state import describe_owner, hostname, stale_reason
from dflash_tui.core.link.transport import Transport


class SupervisorBusy(ControlError):
    """Another supervisor holds the run root; the message names it."""


class LockLost(ControlError):
    """Our lock was taken over (we were judged gone): stop, the other one supervises now."""


class SupervisorLoop:
    """The lock, the loop, the heartbeat and the release; subclasses decide in ``cycle``."""

    name = "supervisor"  # for the log: "supervisor PID 12 ends (...)"

    def __init__(self, log: logging.Logger, poll: float, takeover_s: float) -> None:
        self.log, self.poll, self.takeover_s = log, poll, takeover_s
        self.token = uuid.uuid4().hex
        self.pid, self.host_name = os.getpid(), hostname()
        self.ticks = start_ticks(self.pid)
        self.started_at = time.time()
        self.stop_reason: str | None = None
        # Why each run root's record could not be written (None: it was): said once per change.
        self.write_errors: dict[str, str | None] = {}
        self.history: list[SupervisorEvent] = []  # restarts and FATALs, for every reader
        self.gave_up: Fatal | None = None

    def event(self, kind: str, text: str, run_id: str | None = None) -> None:
        """A restart or a FATAL, kept in the record (the last ``HISTORY_MAX``)."""
        self.history.append(SupervisorEvent(time.time(), kind, text, run_id))
        del self.history[:-HISTORY_MAX]

    def give_up(self, restarts: int, run_id: str | None, last_exit: str | None) -> None:
        self.gave_up = Fatal(time.time(), restarts, run_id, last_exit)
        self.event("fatal", f"FATAL: {self.gave_up.text()}", run_id)

    def state_json(self) -> dict[str, Any]:
        """The record's account of this supervisor's state (base/supervision.py reads it)."""
        return {
            "fatal": self.gave_up.to_json() if self.gave_up is not None else None,
            "history": [e.to_json() for e in self.history],
            "write_error": self.write_error,
        }

    def owner(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host_name, "start_ticks": self.ticks,
                "started_at": self.started_at, "version": __version__}  # fmt: skip

    # -- the lock --

    async def lock_root(self, transport: Transport, host: HostConfig, hint: str) -> files.Reply:
        """Take ``host``'s run root lock, breaking a stale one; SupervisorBusy names a live
        holder (``hint`` says how to stop it)."""
        root = host.run_root
        rep = await files.lock(transport, root, self.token, self.owner())
        if rep.status != "held":
            return rep
        why = stale_reason(rep.owner, rep.record, self.host_name, self.takeover_s)
        if why is None:
            raise SupervisorBusy(
                f"a supervisor already runs for {root} on {host.label}: "
                f"{describe_owner(rep.owner, rep.record)}; {hint}"
            )
        self.log.warning("taking over the lock of %s on %s: %s", root, host.label, why)
        rep = await files.take(transport, root, rep.token or "", self.token, self.owner())
        if rep.status != "locked":
            raise SupervisorBusy(
                f"a supervisor took the lock of {root} first: "
                f"{describe_owner(rep.owner, rep.record)}"
            )
        return rep

    async def beat_root(
        self, transport: Transport, host: HostConfig, record: dict[str, Any]
    ) -> files.Reply:
        """Rewrite the record while the lock is ours; LockLost when it is not any more. A
        record that could not be written (a full disk) is logged once, and the loop goes on."""
        rep = await files.beat(transport, host.run_root, self.token, record)
        if rep.status == "lost":
            raise LockLost(
                f"the lock of {host.run_root} on {host.label} was taken over by "
                f"{describe_owner(rep.owner, None)}: this {self.name} stops"
            )
        self.wrote(rep.why or "cannot write" if rep.status in ("inplace", "unwritten") else None,
                   host)  # fmt: skip
        return rep

    def wrote(self, error: str | None, host: HostConfig) -> None:
        """One log line when writing a run root's record starts or stops failing, with the
        cause (per run root: a job's members fail and recover apart)."""
        key = f"{host.label}\0{host.run_root}"
        was = self.write_errors.get(key)
        if error is not None and was is None:
            self.log.error(
                "cannot write the supervisor record in %s on %s: %s (supervising goes on)",
                host.run_root, host.label, error,
            )  # fmt: skip
        elif error is None and was is not None:
            self.log.info("the supervisor record in %s on %s is written again", host.run_root,
                          host.label)  # fmt: skip
        self.write_errors[key] = error

    @property
    def write_error(self) -> str | None:
        """Why a record could not be written last (None: every one was)."""
        return next((e for e in self.write_errors.values() if e is not None), None)

    # -- what a kind of supervisor fills in --

    async def cycle(self) -> object:
        """One decision cycle, its heartbeat included (LockLost ends the loop)."""
        raise NotImplementedError

    def cycled(self, result: object) -> None:
        """What a cycle decided, for the log."""

    async def closing(self) -> None:
        """Before the last record: end what runs beside the loop."""

    async def release(self) -> None:
        raise NotImplementedError

    # -- the whole run --

    async def run(self, stop: asyncio.Event, ready: Callable[[], None] | None = None) -> None:
        """Cycle until ``stop`` is set or the lock is lost (LockLost is raised after the
        release); ``ready`` is called once, after the first cycle's heartbeat."""
        try:
            while not stop.is_set():
                try:
                    self.cycled(await self.cycle())
                except LockLost as exc:
                    self.stop_reason = "lock taken over"
                    self.log.error("%s", exc)
                    raise
                except Exception as exc:  # one bad cycle must not end supervision
                    self.log.warning("cycle failed: %r", exc)
                if ready is not None:
                    ready()
                    ready = None
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll)
            self.stop_reason = self.stop_reason or "stopped"
        finally:
            await self.closing()
            await self.release()
            self.log.info("%s PID %d ends (%s)", self.name, self.pid, self.stop_reason or "error")
