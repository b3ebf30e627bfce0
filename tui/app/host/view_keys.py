"""Keys that only touch the view (the logs' filter, search, follow and wrap; the tabs; the
History's zoom and pan; the GPU grid's compact mode; zooming an area): a mixin of the app,
each action acting on the pane of the host shown in detail. Nothing here changes the world
(tui/app/control/actions.py has those keys)."""

from __future__ import annotations

from typing import Protocol

from textual.screen import Screen
from textual.widget import Widget

from dflash_tui.app.host.log_keys import LogKeys
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.ports import AppPort
from dflash_tui.app.widgets.themes import AppThemes


class RunKeys(Protocol):
    """The host's control (tui/app/control/actions.py), as the escape key needs it."""

    def waits_active(self) -> bool: ...

    def cancel_wait(self) -> None: ...


class SamplesNow(Protocol):
    def refresh_now(self) -> None: ...


class ViewApp(AppPort, Protocol):
    """What the view keys need from the app besides ``AppPort``."""

    @property
    def log_keys(self) -> LogKeys: ...

    def detail(self) -> HostPane:
        """The pane of the host shown in detail."""
        ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def control(self) -> RunKeys: ...

    @property
    def feeds(self) -> SamplesNow: ...

    @property
    def app_themes(self) -> AppThemes: ...

    @property
    def focused(self) -> Widget | None: ...


class ViewKeys:
    """The app's ``action_*`` methods for the view keys (``DflashApp`` mixes it in)."""

    async def action_filter(self: ViewApp) -> None:
        await self.detail().logs().open_filter()

    def apply_filter(self: ViewApp, text: str) -> None:
        area = self.detail().logs()
        try:
            area.apply_filter(text.strip())
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        area.close_filter()
        self.notify("log filter " + (f"/{area.filter_text}/" if area.filter_on else "off"))

    def action_toggle_filter(self: ViewApp) -> None:
        on = self.detail().logs().toggle_filter()
        self.notify("showing filtered lines" if on else "showing all lines", timeout=2)

    def action_follow(self: ViewApp) -> None:
        on = self.detail().logs().toggle_follow()
        self.notify("following the logs" if on else "follow paused", timeout=2)

    async def action_other_tab(self: ViewApp) -> None:
        await self.detail().next_tab()

    def history_shown(self: ViewApp) -> bool:
        """Whether the shown host's History tab is up (its keys work only then)."""
        pane = self.pane_of(self.current)
        return pane is not None and pane.history_shown()

    def action_history_zoom(self: ViewApp) -> None:
        self.detail().history().zoom()

    def action_history_pan(self: ViewApp, halves: int) -> None:
        self.detail().history().pan(halves)

    def action_whole_machine(self: ViewApp) -> None:
        self.detail().toggle_whole_machine()

    def action_compact(self: ViewApp) -> None:
        compact = self.detail().toggle_compact()
        self.notify("GPUs: one line each" if compact else "GPUs: full panels", timeout=2)

    async def action_gpu_procs(self: ViewApp) -> None:
        await self.detail().show_gpu_procs()

    def action_zoom(self: ViewApp) -> None:
        pane = self.detail()
        if pane.zoom.on:
            pane.zoom.off()
        elif pane.zoom.toggle(self.focused) is None:
            self.notify("tab to an area first: + zooms the focused one", timeout=3)

    async def action_search(self: ViewApp) -> None:
        await self.log_keys.search()

    def action_search_step(self: ViewApp, forward: bool) -> None:
        self.log_keys.step(forward)

    def action_wrap(self: ViewApp) -> None:
        on = self.detail().logs().toggle_wrap()
        self.notify(
            "long log lines wrap" if on else "long log lines are cut (← → scroll)", timeout=2
        )

    def action_save_view(self: ViewApp) -> None:
        self.log_keys.save()

    def action_pager(self: ViewApp) -> None:
        self.log_keys.pager()

    def action_escape(self: ViewApp) -> None:
        area = self.detail().logs()
        if area.has_class("-filtering") or area.has_class("-searching"):
            area.close_filter()
            area.close_search()
            self.screen.focus_next()  # the main screen: its binding called this
        elif self.control.waits_active():
            self.control.cancel_wait()

    def action_next_theme(self: ViewApp) -> None:
        self.app_themes.next()

    def action_refresh(self: ViewApp) -> None:
        """R: sample every host now, beside its stream (tui/app/host/feeds.py)."""
        self.feeds.refresh_now()
