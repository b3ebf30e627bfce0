"""What the app's parts need from the app object, as Protocols.

The feeds (tui/app/host/feeds.py), the control actions (tui/app/control/actions.py) and the
auto-restart supervisors (tui/app/control/autorestart.py) are objects that each hold the app
through a protocol of the members they use: mypy checks the parts against it, and checks
``DflashApp`` against it where the app hands itself over, without these modules importing
tui/app/app.py (which imports them). ``AppPort`` is what all of them use; each module extends
it with its own needs.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from textual.notifications import SeverityLevel
from textual.timer import Timer
from textual.worker import Worker
from textual.worker_manager import WorkerManager

from dflash_tui.app.host.pane import HostPane
from dflash_tui.app.host.state import HostState


class AppPort(Protocol):
    """The Textual members every part uses, and the hosts with where each is drawn."""

    @property
    def read_only(self) -> bool: ...

    @property
    def host_states(self) -> Sequence[HostState]: ...

    @property
    def current(self) -> HostState:
        """The host shown in detail: keys act on it."""
        ...

    @property
    def workers(self) -> WorkerManager: ...

    def run_worker(
        self,
        work: Coroutine[Any, Any, Any],
        *,
        name: str,
        group: str,
        exclusive: bool = ...,
        exit_on_error: bool = ...,
    ) -> Worker[Any]: ...

    def set_timer(self, delay: float, callback: Callable[[], object]) -> Timer: ...

    def notify(
        self,
        message: str,
        *,
        title: str = ...,
        severity: SeverityLevel = ...,
        timeout: float | None = ...,
    ) -> None: ...

    def refresh_bindings(self) -> None: ...

    def state_of(self, key: str) -> HostState: ...

    def pane_of(self, state: HostState) -> HostPane | None:
        """The host's pane; None once it is gone or the app is shutting down."""
        ...

    def host_title(self, state: HostState, title: str) -> str: ...
