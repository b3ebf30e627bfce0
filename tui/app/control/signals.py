"""``K``: the process menu, then one confirm naming the PIDs and what is sent (htop's and
bottom's signal menus). TERM (then KILL after the grace), INT, KILL, USR1, and ``py-spy dump``
when py-spy is on the host's PATH (asked through control.sh, over SSH or in a container too).

Whatever is chosen goes through run control (tui/app/control/bridge.py, core/control/pid.py
and pyspy.py), which checks each process against its start time right before acting and
refuses PID 1, kernel threads and our own ancestors. A process control would refuse gets no
menu at all, only the dialog that says why. Tagged rows of the GPU process table are acted on
together after the same one menu and one confirm (tui/app/control/kill_many.py).
"""

from __future__ import annotations

import functools
import os
import pwd
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dflash_tui.app.control.bridge import ControlError, Job
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.control.kill_many import dump_each, kill_each, many_kill_text, refusals, sends
from dflash_tui.app.control.requests import DUMP, ProcessRequest
from dflash_tui.app.host.procs.tree import ProcInfo
from dflash_tui.app.host.state import HostState
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.rundir import group_members
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.control.pid import SIGNALS, known_refusal
from dflash_tui.core.diagnosis.views import Diagnosis

# The menu's words for each choice (after the signal's name).
WHAT = {
    "TERM": "ask it to stop; SIGKILL after {grace:.0f}s if it is still alive",
    "INT": "interrupt, as Ctrl-C (Python raises KeyboardInterrupt); nothing more is sent",
    "KILL": "stop it at once: it cannot clean up (files, GPU memory are freed by the kernel)",
    "USR1": "user signal 1: what it does is the program's; one that does not handle it ends",
    DUMP: "py-spy dump: each thread's Python stack; it is paused a moment, not signalled",
}


class Actions(Protocol):
    """What the menu needs of the control actions (tui/app/control/actions.py)."""

    app: Any

    def ask(self, req: ProcessRequest, screen: ConfirmScreen) -> None: ...


class SignalMenu(ModalScreen[str | None]):
    """The choices for the processes K acts on; dismisses with the choice's id, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,n,q", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    SignalMenu { align: center middle; }
    SignalMenu > Vertical {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    SignalMenu .title { text-style: bold; margin-bottom: 1; }
    SignalMenu OptionList { height: auto; max-height: 12; }
    SignalMenu .hint { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, title: str, choices: Sequence[tuple[str, str]], note: str | None) -> None:
        super().__init__()
        self.title_text, self.choices, self.note = title, tuple(choices), note

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), classes="title")
            options = [Option(Text(f"{c:<12}{what}"), id=c) for c, what in self.choices]
            yield OptionList(*options, id="signal-menu")
            hint = "enter: choose (a confirm follows)   esc: cancel"
            if self.note:
                hint = f"{self.note}\n{hint}"
            yield Static(Text(hint), classes="hint")

    def on_mount(self) -> None:
        menu = self.query_one(OptionList)
        menu.highlighted = 0  # TERM: the safe default, as K always was
        menu.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)


def menu_choices(tools: dict[str, str], grace: float) -> list[tuple[str, str]]:
    choices = [(sig, WHAT[sig].format(grace=grace)) for sig in SIGNALS]
    if DUMP in tools:
        choices.append((DUMP, WHAT[DUMP]))
    return choices


class ProcessSignals:
    """K on the host shown: refusals first, then the menu, the confirm, control."""

    def __init__(self, actions: Actions) -> None:
        self.actions = actions
        self.app = actions.app

    def start(self) -> None:
        state = self.app.current
        infos, unseen = self.app.detail().kill_targets()
        procs = state.snapshot.procs if state.snapshot is not None else ()
        if len(infos) + len(unseen) > 1:
            refused = refusals(
                infos, unseen, lambda pid: known_refusal(state.bridge.transport, pid, procs)
            )
            sent = [i for i in infos if i.pid not in refused]
            if not sent:
                title = f"None of these processes on {state.key} can be killed from here"
                body = many_kill_text(sent, refused, state.bridge.grace)
                self.app.push_screen(ConfirmScreen(title, body, None), lambda _: None)
                return
            self._menu(state, sent, refused)
            return
        info = infos[0] if infos else None
        if info is None:
            what = f"PID {unseen[0]} is not seen by the probe" if unseen else "no process"
            self.app.notify(
                f"{what}: select a process in the tree or the GPU process table", severity="warning"
            )
            return
        why = known_refusal(state.bridge.transport, info.pid, procs)
        if why is None and info.start_ticks is None:  # the bridge refuses it too
            why = f"PID {info.pid}: its start time is unknown, so it cannot be verified"
        if why is not None:  # control would refuse it: no menu, no kill button at all
            title = f"Process {info.pid} on {state.key} cannot be killed from here"
            self.app.push_screen(
                ConfirmScreen(title, refused_text(info, why), None), lambda _: None
            )
            return
        self._menu(state, [info], {})

    def _menu(self, state: HostState, sent: list[ProcInfo], refused: dict[int, str]) -> None:
        """Ask the host which helpers it has (py-spy), then show the menu."""
        pids = ", ".join(str(i.pid) for i in sent[:8]) + (", …" if len(sent) > 8 else "")
        title = f"Send what to PID {pids} on {state.key}?"
        if len(sent) > 1:
            title = f"Send what to {len(sent)} processes on {state.key} ({pids})?"

        async def ask_then_menu() -> None:
            tools: dict[str, str] = {}
            note = None
            ask = getattr(state.bridge, "host_tools", None)
            if ask is not None:
                try:
                    tools = await ask()
                except ControlError as exc:
                    note = f"py-spy not offered: the host was not asked ({safe_label(str(exc))})"
            menu = SignalMenu(title, menu_choices(tools, state.bridge.grace), note)
            self.app.push_screen(menu, functools.partial(self._chosen, state, sent, refused))

        self.app.run_worker(
            ask_then_menu(),
            name=f"host tools {state.key}",
            group=f"host-tools:{state.index}",
            exclusive=True,
            exit_on_error=False,
        )

    def _chosen(
        self, state: HostState, sent: list[ProcInfo], refused: dict[int, str], choice: str | None
    ) -> None:
        if choice is None:
            return
        grace = state.bridge.grace
        req = ProcessRequest(state.key, tuple(sent), choice)
        if len(sent) == 1 and not refused:
            me = acting_user(state.cfg, state.snapshot, state.diagnosis)
            body = process_kill_text(sent[0], grace, me, choice)
        else:
            body = many_kill_text(sent, refused, grace, choice)
        many = len(sent) > 1
        where = f"{len(sent)} processes" if many else f"process {sent[0].pid}"
        if choice == DUMP:
            title = f"py-spy dump of {where} on {state.key}?"
            self.actions.ask(req, ConfirmScreen(title, body, "Dump"))
            return
        verb = "Kill" if choice == "TERM" else f"Send SIG{choice} to"
        button = f"Send SIG{choice}"
        if choice == "TERM":
            button = "Kill all" if many else "Kill process"
        self.actions.ask(req, ConfirmScreen(f"{verb} {where} on {state.key}?", body, button))

    def send(self, req: ProcessRequest, state: HostState) -> tuple[str, Job, str]:
        """What sending ``req`` runs: (the action's name, its job, the first step)."""
        if req.signal == DUMP:
            job: Job = functools.partial(dump_each, state.bridge, req.procs, self.show_dump(state))
            return "py-spy dump", job, f"py-spy dump of {req.pids_text} …"
        job = functools.partial(kill_each, state.bridge, req.procs, signal=req.signal)
        return "kill-process", job, f"SIG{req.signal} to PID {req.pids_text} …"

    def show_dump(self, state: HostState) -> Callable[[str, Text], None]:
        def show(title: str, body: Text) -> None:
            self.app.push_screen(
                ConfirmScreen(f"{title} on {state.key}", body, None), lambda _: None
            )

        return show


def acting_user(cfg: HostConfig, snap: Snapshot | None, diag: Diagnosis | None) -> str | None:
    """The user this app acts as where the process runs, where that is known; else None.

    Here: our effective user. Elsewhere: the owner of the live run's processes (we launched
    them), else the user named in ``user@host``. Never a guess from an ssh config or a container.
    """
    if cfg.address is None and cfg.container is None:
        try:
            return pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            return str(os.geteuid())  # as the probe names a user without a passwd entry
    if diag is not None and snap is not None and diag.run is not None:
        users = {p.user for p in group_members(diag.run, snap.procs)} - {"?", ""}
        if len(users) == 1:
            return users.pop()
    if cfg.address and "@" in cfg.address and cfg.container is None:
        return cfg.address.split("@", 1)[0]
    return None


def refused_text(info: ProcInfo, why: str) -> Text:
    """The K dialog for a process control refuses: what it is, and why nothing is offered."""
    t = Text()
    t.append(f"Control refuses to signal PID {info.pid}: ", style="bold")
    t.append(f"{safe_label(why, 300)}.\n")
    t.append(f"  command: {safe_label(info.cmd, 200)}\n")
    t.append(f"  user: {safe_label(info.user, 40)}   state: {info.state}   PGID: {info.pgid}\n")
    t.append("Nothing can be sent to it from here.\n")
    return t


def process_kill_text(
    info: ProcInfo, grace: float, me: str | None = None, signal: str = "TERM"
) -> Text:
    """The K confirm for one process; ``me``: the user we act as there (None: unknown)."""
    t = Text()
    t.append(sends(f"PID {info.pid}", grace, signal) + "\n", style="bold")
    t.append(f"  command: {safe_label(info.cmd, 200)}\n")
    t.append(f"  user: {safe_label(info.user, 40)}   state: {info.state}   PGID: {info.pgid}\n")
    t.append("  GPUs held: " + (", ".join(f"GPU {g}" for g in info.gpus) or "none") + "\n")
    if me is not None and info.user not in ("?", "", me):
        t.append(
            f"Warning: it belongs to user {safe_label(info.user, 40)}, not {safe_label(me, 40)}"
            " (the user this app acts as there): another user's process.\n",
            style="bold",
        )
    t.append(
        f"Its identity is checked first (start time {info.start_ticks} ticks): if PID "
        f"{info.pid} now belongs to another process, nothing is sent. Never by name.\n"
    )
    if info.in_run and signal != DUMP:
        t.append("It is part of the run's group: k kills the whole run instead.\n", style="bold")
    return t
