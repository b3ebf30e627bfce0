"""Keys that change the world: launch, kill, restart, kill one process. Each goes through run
control (tui/core/control/launch.py via tui/app/control_bridge.py) in a cancellable worker; the
confirm dialogs name the host and exactly which PIDs and GPUs will be signalled. Every key
acts on the host shown in detail only; one action runs at a time."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from rich.text import Text
from textual.screen import ModalScreen
from textual.worker import Worker, WorkerState

from dflash_tui.app.control_bridge import ControlError, StepFn
from dflash_tui.app.host_pane import HostPane
from dflash_tui.app.hosts import HostState
from dflash_tui.app.messages import ControlDone, ControlStep
from dflash_tui.app.ports import AppPort
from dflash_tui.app.screens import ConfirmScreen
from dflash_tui.app.signals import ProcessSignals
from dflash_tui.app.waits import WaitBar
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.diagnose import Diagnosis

Job = Callable[[StepFn], Awaitable[str]]


class ControlApp(AppPort, Protocol):
    """What the control actions need from the app besides ``AppPort``."""

    def detail(self) -> HostPane:
        """The pane of the host shown in detail."""
        ...

    def wait_bar(self) -> WaitBar | None:
        """The wait bar; None once the app is shutting down."""
        ...

    def push_screen(self, screen: ModalScreen[Any], callback: Callable[[Any], None]) -> object: ...


class ControlActions:
    """Every action acts on the host shown in detail (``app.current``), and names it."""

    def __init__(self, app: ControlApp) -> None:
        self.app = app
        self.steps: list[str] = []  # the latest progress texts (tests read them)
        self._host: HostState | None = None  # the host of the running action
        self.signals = ProcessSignals(self)  # K: the process menu (tui/app/signals.py)

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
        busy = busy_gpus_text(state.diagnosis)
        if busy is None:
            self._start(state, "launch", state.bridge.launch, f"launching on {state.key} …")
            return
        where = f" on {state.key}" if len(self.app.host_states) > 1 else ""
        self.confirm(
            state,
            ConfirmScreen(f"Launch{where} beside processes that are not ours?", busy, "Launch"),
            "launch",
            state.bridge.launch,
            f"launching on {state.key} …",
        )

    def kill(self) -> None:
        state = self.app.current
        live = state.live_run()
        if live is None:
            self.app.notify(f"no live run to kill on {state.key}", severity="warning")
            return
        snap, diag = live
        assert diag.run is not None
        rid = diag.run.id  # the run named in the dialog is the one signalled, never a newer one
        ask = getattr(state.bridge, "kill_targets", None)
        if ask is None:  # a stand-in control (tests, replays): what the sample shows
            self._confirm_kill(state, run_kill_text(snap, diag, state.bridge.grace))
            return

        async def ask_then_confirm() -> None:
            try:
                targets: tuple[Proc, ...] | None = await ask(rid)
                note = None
            except ControlError as exc:
                targets, note = None, f"the host was not asked ({exc}): processes that left "
                note += "the group are not listed, though control signals them too"
            self._confirm_kill(state, run_kill_text(snap, diag, state.bridge.grace, targets, note))

        self.app.notify(f"asking {state.key} which processes the kill would signal …", timeout=2)
        self.app.run_worker(
            ask_then_confirm(), name="kill targets", group="kill-targets", exclusive=True
        )

    def _confirm_kill(self, state: HostState, body: Text) -> None:
        diag = state.diagnosis
        rid = diag.run.id if diag is not None and diag.run is not None else None
        self.confirm(
            state,
            ConfirmScreen(f"Kill run {rid} on {state.key}?", body, "Kill"),
            "kill",
            functools.partial(state.bridge.kill, run_id=rid),
            f"killing on {state.key}: SIGTERM …",
        )

    def restart(self) -> None:
        state = self.app.current
        diag, live = state.diagnosis, state.live_run()
        body = Text()
        if live is not None:
            body = run_kill_text(*live, state.bridge.grace)
            body.append("\nThen wait until its GPU memory is released, and launch again:\n")
        else:
            body.append("No live run: this launches a new one:\n")
        body.append(f"  {safe_label(state.cfg.command, 300)}\n", style="bold")
        body.append("A new run id and log file are created; the old log is kept.")
        rid = diag.run.id if diag and diag.run else None
        what = f"run {rid}" if rid else "(launch) the run"
        where = f" on {state.key}" if len(self.app.host_states) > 1 else ""  # one host: no name
        self.confirm(
            state,
            ConfirmScreen(f"Restart {what}{where}?", body, "Restart"),
            "restart",
            functools.partial(state.bridge.restart, run_id=rid),
            f"restarting on {state.key} …",
        )

    def kill_process(self) -> None:
        """K: the process menu, then a confirm naming the PIDs and the signal (signals.py)."""
        self.signals.start()

    def confirm(
        self, state: HostState, screen: ConfirmScreen, name: str, job: Job, first: str
    ) -> None:
        """Show ``screen``; on yes, start ``job`` as control action ``name``."""

        def answered(yes: bool | None) -> None:
            if yes:
                self._start(state, name, job, first)

        self.app.push_screen(screen, answered)

    def cancel_wait(self) -> None:
        """Ask control to stop waiting (it reports what it already did); force after 5 s."""
        if not self.waits_active() or self._host is None:
            return
        cancel = getattr(self._host.bridge, "request_cancel", None)
        if cancel is not None:
            cancel()
            self._wait_bar(lambda bar: bar.step("cancelling …"))
        self.app.set_timer(5.0 if cancel else 0.0, self._force_cancel)

    def _force_cancel(self) -> None:
        for w in self.app.workers:
            if w.group == "control" and w.is_running:
                w.cancel()

    def waits_active(self) -> bool:
        """One control action at a time, whichever host it acts on."""
        return any(w.group == "control" and w.is_running for w in self.app.workers)

    # -- plumbing --

    def _start(self, state: HostState, name: str, job: Job, first: str) -> None:
        if self.app.read_only:  # bindings are hidden too; this is the second lock
            self.app.notify("read-only mode: nothing is launched or killed", severity="error")
            return
        if self.waits_active():
            self.app.notify("another action is still running (esc cancels it)", severity="warning")
            return
        self._host = state
        self._wait_bar(lambda bar: bar.start(first))
        self.app.run_worker(
            self._control_job(state.key, name, job),
            name=name,
            group="control",
            exit_on_error=False,
        )

    async def _control_job(self, host: str, name: str, job: Job) -> None:
        post = self.app.post_message

        def step(text: str, done: float | None = None, total: float | None = None) -> None:
            post(ControlStep(host, text, done, total))

        try:
            text = await job(step)
        except ControlError as exc:
            post(ControlDone(host, name, False, str(exc)))
            return
        except asyncio.CancelledError:
            post(ControlDone(host, name, False, f"{name} cancelled; nothing more is sent"))
            raise
        post(ControlDone(host, name, True, text))

    def step(self, msg: ControlStep) -> None:
        self.steps.append(msg.text)
        del self.steps[:-50]
        text = f"{msg.host}: {msg.text}" if len(self.app.host_states) > 1 else msg.text
        self._wait_bar(lambda bar: bar.step(text, msg.done, msg.total))

    def done(self, msg: ControlDone) -> None:
        self._wait_bar(WaitBar.stop)
        self.app.notify(
            safe_label(msg.text, 600),
            title=self.app.host_title(self.app.state_of(msg.host), msg.action),
            severity="information" if msg.ok else "error",
            timeout=6 if msg.ok else 12,
        )
        self.app.refresh_bindings()

    def worker_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "control":
            return
        if event.state == WorkerState.ERROR:  # a bug, not a ControlError: say so, keep going
            self._wait_bar(WaitBar.stop)
            self.app.notify(f"{event.worker.name} failed: {event.worker.error!r}", severity="error")
        self.app.refresh_bindings()

    def _wait_bar(self, draw: Callable[[WaitBar], None]) -> None:
        """Draw on the wait bar, unless the app is shutting down (a cancelled action still
        reports that it ended)."""
        bar = self.app.wait_bar()
        if bar is not None:
            draw(bar)


def run_kill_text(
    snap: Snapshot,
    diag: Diagnosis,
    grace: float,
    targets: Sequence[Proc] | None = None,
    note: str | None = None,
) -> Text:
    """What a kill of the run will signal: its group, each member, and the GPUs they hold.

    ``targets`` is control.sh's own list (the group and the processes that left it, by the
    run's marker); without it the sample's group members are shown, with ``note`` saying why.
    """
    run = diag.run
    assert run is not None
    members = list(targets) if targets is not None else group_members(run, snap.procs)
    pids = {p.pid for p in members}
    gpus = sorted(
        v.index
        for v in diag.gpus
        if any((p.container_pid or p.pid) in pids or p.owner == "run" for p in v.processes)
    )
    t = Text()
    t.append(f"SIGTERM to process group {run.pgid} (run {run.id}), then SIGKILL after ")
    t.append(f"{grace:.0f}s if it is still alive.\n", style="bold")
    t.append("The group is checked against the run's recorded start time first.\n\n")
    t.append(f"PIDs ({len(members)}):\n", style="bold")
    for p in members[:12]:
        left = "  (left the group: signalled by PID)" if p.pgid != run.pgid else ""
        t.append(f"  {p.pid:>7}  {p.state}  {safe_label(p.cmd, 60)}{left}\n")  # one line each
    if len(members) > 12:
        t.append(f"  … and {len(members) - 12} more\n")
    t.append("GPUs held: ", style="bold")
    t.append(", ".join(f"GPU {g}" for g in gpus) if gpus else "none", style="bold")
    t.append("\n")
    if note:
        t.append(f"Note: {note}\n", style="italic")
    return t


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
