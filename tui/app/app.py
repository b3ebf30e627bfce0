"""The dflash-tui App: it composes the hosts (tui/app/host/), binds the keys to the parts that
act on them (the view keys to the pane of the host shown, the run keys to its control,
tui/app/control/) and switches screens. With several hosts an overview lists them all and
``[``, ``]``, ``1``-``9`` switch the host shown in detail.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from textual.app import App, SystemCommand
from textual.driver import Driver
from textual.markup import escape
from textual.notifications import SeverityLevel
from textual.screen import Screen

from dflash_tui.app import heap
from dflash_tui.app.control.actions import ControlActions
from dflash_tui.app.control.autorestart import AutoRestarts
from dflash_tui.app.control.slurm import make_bridge
from dflash_tui.app.host.alerts import AppAlerts
from dflash_tui.app.host.feeds import HostFeeds
from dflash_tui.app.host.log_keys import LogKeys
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.source import EventSource
from dflash_tui.app.host.state import HostState, job_views, make_hosts, summarize
from dflash_tui.app.host.view_keys import ViewKeys
from dflash_tui.app.keys.keymap import help_keys
from dflash_tui.app.keys.table import DESTRUCTIVE, HISTORY_ACTIONS, HOST_ACTIONS, KEYS
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.app.screens.main import MainScreen
from dflash_tui.app.screens.overview import HostOverview
from dflash_tui.app.terminal import announcing_driver
from dflash_tui.app.widgets.themes import AppThemes
from dflash_tui.app.widgets.waits import WaitBar
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.invocation import quit_commands
from dflash_tui.core.base.rundir import ALIVE_STATES
from dflash_tui.core.base.text import safe_label, terminal_safe
from dflash_tui.core.link.transport import finish_pending, finishing

QUIT_FINISH_S = 10.0  # how long quitting waits for the commands it cut off
QUIT_NOTE = "q quits the app only: the run keeps running, and dflash-tui re-attaches to it."


class DflashApp(ViewKeys, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "dflash-tui"

    def __init__(
        self,
        cfg: Config,
        *,
        source: EventSource | None = None,
        sources: Sequence[EventSource | None] = (),
        control: object | None = None,
    ) -> None:
        """``source`` (the first host's) or ``sources`` (one per host, in config order)
        replace the live probes: tests and replays; ``control`` stands in for the first
        host's run control."""
        self.terminal_driver: Driver | None = None  # the one Textual built for the terminal
        super().__init__()
        self.cfg = cfg
        self.read_only = cfg.read_only
        self.host_states = make_hosts(cfg, sources or [source], control, make_bridge)
        self.selected = 0  # the host shown in detail; keys act on it
        self.samples = 0  # samples drawn, all hosts together (tests wait on this)
        self.draw_errors: set[str] = set()
        self.feeds = HostFeeds(self)  # each host's samples, to its pane
        self.log_keys = LogKeys(self)  # tui/app/host/log_keys.py
        self.alerts = AppAlerts(self, cfg.alerts)  # tui/app/host/alerts.py
        self.auto_restarts = AutoRestarts(self, self.alerts.decision)
        self.control = ControlActions(self, self.auto_restarts)  # the run keys, per host
        self.unfinished: list[int] = []  # commands cut off that had not ended when it left
        self.user_keys = dict(cfg.keys)  # [keys]: binding id -> keys (tui/app/keys/keymap.py)
        self.set_keymap(self.user_keys)
        self.app_themes = AppThemes(self, cfg.theme)  # t cycles them (tui/app/host/view_keys.py)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast is plain text: messages carry log lines, launcher errors and paths,
        and one stray ``[/x]`` parsed as markup would crash the app; and terminal-safe: a
        launch_error file the job wrote must not set the terminal's title or clipboard."""
        title = safe_label(title) if title else title
        super().notify(
            terminal_safe(message, visible=False),
            title=title,
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    # -- screen and data flow (tui/app/host/feeds.py) --

    def get_default_screen(self) -> Screen[None]:
        return MainScreen([s.key for s in self.host_states], self.read_only, self.apply_filter)

    def on_mount(self) -> None:
        self.app_themes.apply_start()
        # After the first refresh every composed widget (tab panes too) is mounted.
        self.call_after_refresh(self.feeds.start)
        self.call_after_refresh(self.auto_restarts.start)
        self.call_after_refresh(self.refresh_overview)

    async def on_unmount(self) -> None:
        heap.restore_collector()
        # First: they use the transports the feeds close. A command cut off by the quit runs
        # on to its end; its output comes here, so the app waits for it.
        await self.control.stop()
        await self.auto_restarts.stop()
        await self._finish_commands()
        await self.feeds.stop()
        await self.alerts.stop()

    async def _finish_commands(self) -> None:
        """Wait for the commands the quit cut off, saying so on the terminal. Named before
        the wait, so an impatient Ctrl-C still leaves them in the quit note."""
        self.unfinished = finishing()
        if not self.unfinished:
            return
        pids = ", ".join(map(str, self.unfinished))
        if self.terminal_driver is not None and not self.is_headless and not self.is_web:
            # The driver has left the alternate screen, but its writer thread may still hold
            # the bytes that do so: closed (joined) first, the line lands on the shell's screen.
            # Nothing is written through it after that (its queue has no reader left).
            self.terminal_driver.close()
            self.terminal_driver = None
        if not self.is_web:  # a browser's tab is gone by now: nowhere to say it
            print(
                f"dflash-tui: waiting up to {QUIT_FINISH_S:g} s for the commands it started on"
                f" this machine to end (PID {pids}) …",
                file=sys.stderr,
            )
        self.unfinished = await finish_pending(QUIT_FINISH_S)

    def get_driver_class(self) -> type[Driver]:
        """Textual's pick, announcing the driver it builds (``write_terminal`` writes
        through it; tui/app/terminal.py says why)."""
        return announcing_driver(super().get_driver_class(), self._driver_built)

    def _driver_built(self, driver: Driver) -> None:
        self.terminal_driver = driver

    def write_terminal(self, data: str) -> None:
        """Raw bytes to the terminal (the opt-in bell / OSC 9 / OSC 777 of the app's alerts),
        queued behind the frame being written. Headless (tests) Textual builds its own
        driver, not the one announced: nothing is written."""
        if self.terminal_driver is not None and not self.is_headless:
            self.terminal_driver.write(data)

    def action_control(self, key: str) -> None:
        """A run key (launch, kill, restart, kill_process, auto_restart, cancel_wait): one
        request, built and sent by the host's control (tui/app/control/actions.py)."""
        self.control.key(key)

    # -- the host shown in detail (keys and control act on it) --

    @property
    def current(self) -> HostState:
        return self.host_states[self.selected]

    def detail(self) -> HostPane:
        """The pane of the host shown (keys come only while it is there)."""
        pane = self.pane_of(self.current)
        if pane is None:
            raise RuntimeError(f"the pane of {self.current.key} is missing")
        return pane

    async def select_host(self, index: int) -> None:
        """Show host ``index`` in detail (awaited: its pane's widgets are made the first time,
        and the keys that act on them wait until they are)."""
        if not 0 <= index < len(self.host_states) or index == self.selected:
            return
        self.selected = index
        screen = self.main_screen()
        if screen is not None:
            await screen.show_pane(index)
        self.refresh_overview()
        self.refresh_bindings()

    async def on_host_overview_picked(self, msg: HostOverview.Picked) -> None:
        await self.select_host(msg.index)

    async def action_next_host(self) -> None:
        await self.select_host((self.selected + 1) % len(self.host_states))

    async def action_prev_host(self) -> None:
        await self.select_host((self.selected - 1) % len(self.host_states))

    async def action_show_host(self, index: int) -> None:
        if index >= len(self.host_states):
            self.notify(f"there are {len(self.host_states)} hosts", severity="warning", timeout=3)
        await self.select_host(index)

    # -- where each host is drawn --

    def main_screen(self) -> MainScreen | None:
        """The main screen; None once the app is shutting down (its screens are closing), when
        a sample, a link tick or a finished action may still arrive."""
        if not self.is_running:
            return None
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def state_of(self, key: str) -> HostState:
        return next(s for s in self.host_states if s.key == key)

    def pane_of(self, state: HostState) -> HostPane | None:
        screen = self.main_screen()
        return screen.pane(state.index) if screen is not None else None

    def wait_bar(self) -> WaitBar | None:
        screen = self.main_screen()
        return screen.query_one(WaitBar) if screen is not None else None

    def host_title(self, state: HostState, title: str) -> str:
        """Notification titles name the host once there are several."""
        return f"{state.key}: {title}" if len(self.host_states) > 1 else title

    def refresh_overview(self) -> None:
        screen = self.main_screen()
        if screen is None or screen.overview is None:
            return
        rows = [summarize(s) for s in self.host_states]
        screen.overview.show(rows, self.selected, job_views(self.host_states))

    def refresh_bindings(self) -> None:
        if self.screen_stack:  # shutting down: no footer is left to update
            super().refresh_bindings()

    def draw_safely(self, what: str, draw: Callable[[], None]) -> None:
        """One broken panel must not end the supervision: report it once, keep the rest
        (every pane and themed widget draws through this, tui/app/widgets/themed.py)."""
        try:
            draw()
        except Exception as exc:
            if what not in self.draw_errors:
                self.draw_errors.add(what)
                self.log.error(f"drawing {what} failed", exc)
                self.notify(f"drawing {what} failed: {exc!r}", severity="error", timeout=15)

    def action_help(self) -> None:
        many = len(self.host_states) > 1
        keys = help_keys(self.user_keys, self.read_only, many, self.history_shown())
        notes = [QUIT_NOTE]
        if self.read_only:
            notes.append(
                "Read-only mode: launch, kill, restart, kill-process and auto-restart are disabled."
            )
        self.push_screen(HelpScreen(keys, notes))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in HOST_ACTIONS:
            return len(self.host_states) > 1  # hidden everywhere with one host
        if action in HISTORY_ACTIONS:
            return self.history_shown()
        key = parameters[0] if action == "control" and parameters else action
        if key in DESTRUCTIVE:
            if self.read_only:
                return False  # hidden from the footer, the help and the palette
            # A works mid-kill; l, k, r on a Slurm node wait on its Slurm host's action.
            if key != "auto_restart" and self.control.busy(self.control.target(str(key))):
                return None  # shown greyed out while another action runs on this host
        return True

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for _key, action, _text, helptext in KEYS:
            if action in ("focus_next", "quit") or (self.read_only and action in DESTRUCTIVE):
                continue
            title = action.replace("_", " ").capitalize()
            run: Callable[[], object] = (
                partial(self.control.key, action)
                if action in DESTRUCTIVE
                else getattr(self, f"action_{action}")
            )
            yield SystemCommand(escape(title), escape(helptext), run)
        yield from self._host_commands()

    def _host_commands(self) -> Iterable[SystemCommand]:
        if len(self.host_states) < 2:
            return
        yield SystemCommand("Next host", "show the next host ( ] )", self.action_next_host)
        yield SystemCommand("Previous host", "show the previous host ( [ )", self.action_prev_host)
        for s in self.host_states:
            yield SystemCommand(
                escape(f"Show host {s.key}"),  # the palette reads markup; labels are the user's
                f"host {s.index + 1}: its details, and l, k, r, K act on it",
                lambda i=s.index: self.select_host(i),
            )

    def quit_note(self) -> str:
        """What keeps running after q: one line per host with a live run; and what the flight
        recorders said as the app stopped (samples left out, a close that failed)."""
        notes = [
            f"dflash-tui: a command it started on this machine (session {pid}) did not end by"
            f" itself before the app left: it may not have done all its work (`ps -s {pid}`"
            " shows whether it still runs)."
            for pid in self.unfinished
        ]
        notes += [f"dflash-tui: {text}" for text in self.feeds.exit_notes]
        for state in self.host_states:
            diag = state.diagnosis
            run = diag.run if diag else None
            if diag is None or run is None or diag.run_state not in ALIVE_STATES:
                continue
            if state.slurm_host is not None:  # a node of a Slurm job: its Slurm host says it
                continue
            where = f" on {state.key}" if len(self.host_states) > 1 else ""
            kill, again = quit_commands(state.cfg, self.cfg)
            notes.append(
                f"dflash-tui: quit; run {run.id}{where} keeps running (PID {run.pid}, PGID "
                f"{run.pgid}). Stop it with `{kill}`, or re-attach with `{again}`."
            )
        return "\n".join(notes)
