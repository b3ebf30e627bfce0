"""The log keys beside the filter: search (``s``, then ``n``/``N``), save the view (``S``),
open the whole log in ``$PAGER`` (``v``). They act on the focused tail of the host shown,
else its run log (tui/app/host/logs/)."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Protocol

from textual.app import SuspendNotSupported
from textual.widget import Widget

from dflash_tui.app.host.logs.export import fetch_clean_copy, pager_argv, save_lines
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.state import HostState
from dflash_tui.app.ports import AppPort


class LogKeysApp(AppPort, Protocol):
    @property
    def focused(self) -> Widget | None: ...

    def detail(self) -> HostPane: ...

    @property
    def is_headless(self) -> bool: ...

    def suspend(self) -> object: ...


class LogKeys:
    def __init__(self, app: LogKeysApp) -> None:
        self.app = app
        self.saved: list[str] = []  # paths written (tests read them)

    def _tail(self) -> LogTail | None:
        tail = self.app.detail().logs().current_tail(self.app.focused)
        if tail is None:
            self.app.notify("no log is watched here", severity="warning", timeout=3)
        return tail

    async def search(self) -> None:
        await self.app.detail().logs().open_search()

    def step(self, forward: bool) -> None:
        area = self.app.detail().logs()
        tail = self._tail()
        if tail is None:
            return
        if not area.search_text:
            self.app.notify("no search yet: s searches the logs", timeout=3)
            return
        area.jump(tail, forward)

    def save(self) -> None:
        """The lines the tail shows now (after the filter), as plain text."""
        tail = self._tail()
        if tail is None:
            return
        try:
            path = save_lines(tail.log_view.lines, tail.data.path)
        except OSError as exc:
            self.app.notify(f"saving the view failed: {exc}", severity="error")
            return
        self.saved.append(str(path))
        self.app.notify(f"saved {len(tail.log_view.lines)} lines to {path}", timeout=8)

    def pager(self) -> None:
        tail = self._tail()
        if tail is not None:
            state = self.app.current
            self.app.run_worker(
                self._page(state, tail.data.path), name="pager", group="pager", exclusive=True
            )

    async def _page(self, state: HostState, path: str) -> None:
        try:
            copy = await fetch_clean_copy(state.transport, path)
        except Exception as exc:  # the link, the file: said, never fatal
            self.app.notify(f"reading {path} failed: {exc}", severity="error")
            return
        try:
            argv = pager_argv(copy)
            if self.app.is_headless:  # no terminal to hand over (tests): the pager runs alone
                await asyncio.to_thread(subprocess.run, argv, stdin=subprocess.DEVNULL, check=False)
            else:
                with self.app.suspend():  # type: ignore[attr-defined]
                    subprocess.run(argv, check=False)
        except SuspendNotSupported:
            self.app.notify("this terminal cannot be handed to a pager (S saves the view)")
        except OSError as exc:
            self.app.notify(f"the pager {argv[0]!r} failed: {exc}", severity="error")
        finally:
            copy.unlink(missing_ok=True)
