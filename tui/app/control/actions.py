"""Keys that change the world: launch, kill, restart, kill one process. Each key builds one
value (tui/app/control/requests.py), its confirm dialog names the host and exactly which PIDs
and GPUs will be signalled, and yes sends that value through run control
(tui/app/control/bridge.py) in a cancellable worker of that host.

Control is per host: each key acts on the host shown in detail; one action runs at a time on a
host, never waiting for another host's action or link; an action for a host whose link is down
is refused at once, saying so (its transport would only hang on the connect)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Protocol

from rich.text import Text
from textual.screen import ModalScreen
from textual.worker import Worker

from dflash_tui.app.control.autorestart import AutoRestarts
from dflash_tui.app.control.bridge import ControlError, Job
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.control.quit import end_workers
from dflash_tui.app.control.requests import (
    ControlRequest,
    JobKillRequest,
    KillRequest,
    LaunchRequest,
    ProcessRequest,
    RestartRequest,
    kill_request,
    kill_text,
    restart_text,
)
from dflash_tui.app.control.signals import ProcessSignals
from dflash_tui.app.control.slurm import KEYS as SLURM_KEYS
from dflash_tui.app.control.slurm import SlurmKeys
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.state import HostState
from dflash_tui.app.ports import AppPort
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.snapshot import Proc
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.link.transport import CutOff, cut_off_here


class ControlApp(AppPort, Protocol):
    """What the control actions need from the app besides ``AppPort``."""

    def detail(self) -> HostPane:
        """The pane of the host shown in detail."""
        ...

    def wait_bar(self) -> WaitBar | None:
        """The wait bar; None once the app is shutting down."""
        ...

    def push_screen(self, screen: ModalScreen[Any], callback: Callable[[Any], None]) -> object: ...


CONTROL_GROUP = "control:"  # a host's control worker: control:<index>
KEYS = ("launch", "kill", "restart", "kill_process", "auto_restart", "cancel_wait")


def control_group(state: HostState) -> str:
    return f"{CONTROL_GROUP}{state.index}"


class ControlActions:
    """Every action acts on the host shown in detail (``app.current``), and names it."""

    def __init__(self, app: ControlApp, auto: AutoRestarts) -> None:
        self.app = app
        self.auto = auto  # A: the app's auto-restart (tui/app/control/autorestart.py)
        self.steps: list[str] = []  # the latest progress texts (tests read them)
        self.running: dict[str, str] = {}  # host key -> the action running there
        self.signals = ProcessSignals(self)  # K: the process menu (tui/app/control/signals.py)
        self.slurm = SlurmKeys(self)  # l, k, r on a Slurm host (tui/app/control/slurm.py)

    def key(self, name: str) -> None:
        """A run key (``KEYS``) pressed on the host shown."""
        if name == "auto_restart":
            self.auto.toggle()
        elif name == "cancel_wait":
            self.cancel_wait()
        elif name in KEYS and self.reachable(self.target(name), name.replace("_", " ")):
            if name in SLURM_KEYS and self.app.current.cfg.scheduler == "slurm":
                self.slurm.key(name)
            else:
                getattr(self, name)()

    def target(self, name: str) -> HostState:
        """The host key ``name`` acts on from the host shown: a run key on a Slurm node acts
        on its Slurm host (whose link and whose running action count); the rest on the host
        shown."""
        state = self.app.current
        return state.owner if name in SLURM_KEYS else state

    def reachable(self, state: HostState, what: str) -> bool:
        """Whether ``state``'s link is up or coming; else it says so at once. This machine
        is always reachable: its probe failing says nothing of its shell."""
        local = state.cfg.address is None and state.cfg.container is None
        if state.link != "down" or local:
            return True
        self.app.notify(
            f"host {state.key} is unreachable: {what} not sent ({state.link_error})",
            title=self.app.host_title(state, what),
            severity="error",
            timeout=8,
        )
        return False

    # -- the actions --

    def launch(self) -> None:
        state = self.app.current
        live = state.live_run()
        if live is not None:
            run = live[1].run
            assert run is not None
            self.app.notify(
                f"run {run.id} is alive on {state.key} (PGID {run.pgid}): r restarts it",
                severity="warning",
            )
            return
        req = LaunchRequest(state.key)
        busy = busy_gpus_text(state.diagnosis)
        if busy is None:
            self.send(req)
            return
        where = f" on {state.key}" if len(self.app.host_states) > 1 else ""
        title = f"Launch{where} beside processes that are not ours?"
        self.ask(req, ConfirmScreen(title, busy, "Launch"))

    def kill(self) -> None:
        """The run of the sample shown when ``k`` is pressed is the one named and signalled;
        the host is asked what the kill would signal, then the dialog shows the request."""
        state = self.app.current
        live = state.live_run()
        if live is None:
            self.app.notify(f"no live run to kill on {state.key}", severity="warning")
            return
        snap, diag = live
        assert diag.run is not None
        rid, grace = diag.run.id, state.bridge.grace
        ask = getattr(state.bridge, "kill_targets", None)
        if ask is None:  # a stand-in control (tests, replays): what the sample shows
            self._confirm_kill(kill_request(state.key, snap, diag, grace))
            return

        async def ask_then_confirm() -> None:
            try:
                targets: tuple[Proc, ...] | None = await ask(rid)
                note = None
            except ControlError as exc:
                targets, note = None, f"the host was not asked ({exc}): processes that left "
                note += "the group are not listed, though control signals them too"
            self._confirm_kill(kill_request(state.key, snap, diag, grace, targets, note))

        self.app.notify(f"asking {state.key} which processes the kill would signal …", timeout=2)
        self.app.run_worker(
            ask_then_confirm(),
            name=f"kill targets {state.key}",
            group=f"kill-targets:{state.index}",
            exclusive=True,
        )

    def _confirm_kill(self, req: KillRequest) -> None:
        self.ask(
            req, ConfirmScreen(f"Kill run {req.run_id} on {req.host}?", kill_text(req), "Kill")
        )

    def restart(self) -> None:
        state = self.app.current
        diag, live = state.diagnosis, state.live_run()
        kill = kill_request(state.key, *live, state.bridge.grace) if live is not None else None
        rid = diag.run.id if diag and diag.run else None
        req = RestartRequest(state.key, rid, kill, state.cfg.command)
        what = f"run {rid}" if rid else "(launch) the run"
        where = f" on {state.key}" if len(self.app.host_states) > 1 else ""  # one host: no name
        self.ask(req, ConfirmScreen(f"Restart {what}{where}?", restart_text(req), "Restart"))

    def ask(self, req: ControlRequest, screen: ConfirmScreen) -> None:
        """Show ``screen`` (which names ``req``); on yes, send exactly ``req``."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.send(req)

        self.app.push_screen(screen, answered)

    def send(self, req: ControlRequest) -> None:
        """Run control on ``req``'s host, as ``req`` says and nothing else."""
        state = self.app.state_of(req.host)
        bridge = state.bridge
        if isinstance(req, JobKillRequest):
            job: Job = functools.partial(bridge.kill, run_id=req.run_id, job_id=req.job_id)
            self._start(state, "kill", job, f"cancelling Slurm job {req.job_id} …")
        elif isinstance(req, KillRequest):
            job = functools.partial(bridge.kill, run_id=req.run_id)
            self._start(state, "kill", job, f"killing on {req.host}: SIGTERM …")
        elif isinstance(req, RestartRequest):
            job = functools.partial(bridge.restart, run_id=req.run_id)
            self._start(state, "restart", job, f"restarting on {req.host} …")
        elif isinstance(req, ProcessRequest):
            self._start(state, *self.signals.send(req, state))
        else:
            self._start(state, "launch", bridge.launch, f"launching on {req.host} …")

    def kill_process(self) -> None:
        """K: the process menu, then a confirm naming the PIDs and the signal (signals.py)."""
        self.signals.start()

    def cancel_wait(self) -> None:
        """Ask control to stop waiting on the host shown (or the one host with an action): it
        reports what it already did; the worker is cancelled after 5 s."""
        state = self.app.current
        if state.key not in self.running:
            if len(self.running) != 1:
                return
            state = self.app.state_of(next(iter(self.running)))
        # The action running now, not one the host may start before the timer fires.
        workers = [w for w in self.app.workers if w.group == control_group(state) and w.is_running]
        cancel = getattr(state.bridge, "request_cancel", None)
        if cancel is not None:
            cancel()
            self._wait_bar(lambda bar: bar.step(self._said(state.key, "cancelling …")))
        self.app.set_timer(5.0 if cancel else 0.0, lambda: self._force_cancel(workers))

    @staticmethod
    def _force_cancel(workers: list[Worker[Any]]) -> None:
        for w in workers:
            if w.is_running:
                w.cancel()

    async def stop(self) -> None:
        """At quit: the actions in flight are cancelled (their next steps are not sent; Textual
        has usually cancelled their workers already) and ended as tui/app/control/quit.py
        says. A command of theirs cut off runs on to its end (``finish_later`` in
        tui/core/link/transport.py), and the app waits for it (the quit note names one that
        did not end by itself)."""
        workers = [
            w for w in self.app.workers if w.group.startswith(CONTROL_GROUP) and w.is_running
        ]
        for w in workers:
            if not w.is_cancelled:
                w.cancel()
        await end_workers(workers)

    def busy(self, state: HostState) -> bool:
        """One control action at a time on a host."""
        return state.key in self.running

    def waits_active(self) -> bool:
        """Whether any host has a control action running."""
        return bool(self.running)

    # -- plumbing --

    def _start(self, state: HostState, name: str, job: Job, first: str) -> None:
        if self.app.read_only:  # bindings are hidden too; this is the second lock
            self.app.notify("read-only mode: nothing is launched or killed", severity="error")
            return
        if not self.reachable(state, name):
            return
        if self.busy(state):
            self.app.notify(
                f"{self.running[state.key]} is still running on {state.key} (esc cancels it)",
                severity="warning",
            )
            return
        self.running[state.key] = name
        self._wait_bar(lambda bar: bar.start(self._said(state.key, first)))
        self.app.refresh_bindings()
        self.app.run_worker(
            self._control_job(state.key, name, job),
            name=f"{name} {state.key}",
            group=control_group(state),
            exit_on_error=False,
        )

    async def _control_job(self, host: str, name: str, job: Job) -> None:
        def step(text: str, done: float | None = None, total: float | None = None) -> None:
            self.step(host, text, done, total)

        with cut_off_here() as cut:  # the commands of this action that a cancel cuts off
            try:
                text = await job(step)
            except ControlError as exc:
                self.done(host, name, False, str(exc))
                return
            except asyncio.CancelledError:
                self.done(host, name, False, cancelled_text(name, cut))
                for command in cut:
                    command.when_over(functools.partial(self._cut_off_ended, host, name))
                raise
            except Exception as exc:  # a bug, not a ControlError: say so, keep going
                self.done(host, name, False, f"{name} failed: {exc!r}")
                return
        self.done(host, name, True, text)

    def _cut_off_ended(self, host: str, action: str, command: CutOff) -> None:
        """A command a cancel cut off is over: said only when it was killed, which may have
        been part-way through its script (the run's state on screen says the rest). After the
        quit the app takes no notice (its messages are dropped): the quit note names it."""
        why = command.killed
        if why is None:
            return
        what = (
            "its client here was killed; the script may still run where the client ran it"
            if command.wrapped
            else "its session was killed, maybe part-way through its script"
        )
        self.app.notify(
            f"the command {action} left running when it was cancelled (session "
            f"{command.session}): {why}; {what}",
            title=self.app.host_title(self.app.state_of(host), action),
            severity="error",
            timeout=20,
        )

    def _said(self, host: str, text: str) -> str:
        return f"{host}: {text}" if len(self.app.host_states) > 1 else text

    def step(
        self, host: str, text: str, done: float | None = None, total: float | None = None
    ) -> None:
        """Progress of the action on ``host`` (control's ActionProgress, one line)."""
        self.steps.append(text)
        del self.steps[:-50]
        self._wait_bar(lambda bar: bar.step(self._said(host, text), done, total))

    def done(self, host: str, action: str, ok: bool, text: str) -> None:
        """The action on ``host`` ended: ``ok`` False when it failed or was cancelled."""
        self.running.pop(host, None)
        if self.running:  # another host's action goes on: the bar names it
            other, what = next(iter(self.running.items()))
            self._wait_bar(lambda bar: bar.step(self._said(other, f"{what} …")))
        else:
            self._wait_bar(WaitBar.stop)
        self.app.notify(
            safe_label(text, 600),
            title=self.app.host_title(self.app.state_of(host), action),
            severity="information" if ok else "error",
            timeout=6 if ok else 12,
        )
        self.app.refresh_bindings()

    def _wait_bar(self, draw: Callable[[WaitBar], None]) -> None:
        """Draw on the wait bar, unless the app is shutting down (a cancelled action still
        reports that it ended)."""
        bar = self.app.wait_bar()
        if bar is not None:
            draw(bar)


def cancelled_text(action: str, cut: list[CutOff]) -> str:
    """What a cancelled action says, with the sessions of its commands on this machine that
    run on (each ends whole, or is killed at its deadline and said then)."""
    text = f"{action} cancelled: its next steps are not sent"
    running = [c.session for c in cut if c.running]
    if len(running) == 1:
        text += (
            f"; the command it had running on this machine (session {running[0]}) runs on "
            "to its end, held to its deadline while the app runs"
        )
    elif running:
        sessions = ", ".join(str(sid) for sid in running)
        text += (
            f"; the commands it had running on this machine (sessions {sessions}) run on to "
            "their ends, each held to its deadline while the app runs"
        )
    return text


def busy_gpus_text(diag: Diagnosis | None) -> Text | None:
    """The launch dialog's body when GPUs of the topology are held by processes that are not
    the run's (orphans, other jobs, PIDs this view cannot place); None when there are none."""
    if diag is None:
        return None
    rows = [
        (v.index, p)
        for v in diag.gpus
        if v.role != "unassigned"
        for p in v.processes
        if p.owner != "run"
    ]
    if not rows:
        return None
    t = Text()
    t.append("GPUs the run needs are already held by processes that are not ours:\n", "bold")
    for index, p in rows[:10]:
        mem = f"{p.used_mib} MiB" if p.used_mib is not None else "memory unknown"
        t.append(f"  GPU {index}: PID {p.pid} {safe_label(p.name, 40)} ({p.owner}, {mem})\n")
    if len(rows) > 10:
        t.append(f"  … and {len(rows) - 10} more\n")
    t.append("\nThe new run may run out of memory or share these GPUs with them. Launch anyway?")
    return t
