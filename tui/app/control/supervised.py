"""The app beside a live headless supervisor (``dflash-tui supervise``) on the same run root.

The supervisor's record comes with every sample (the probe reads ``supervisor.json``). While
its heartbeat is fresh the header says ``supervised``, the app's own auto-restart leaves every
crash to it (tui/core/control/restart.py checks before it restarts), and ``A`` asks the
supervisor to turn its auto-restart on or off (``supervisor.policy.json``) instead of starting
a second loop; the supervisor's next record says what it did.
"""

from __future__ import annotations

from dflash_tui.app.host.state import HostState, shown_supervisor
from dflash_tui.app.ports import AppPort
from dflash_tui.core.control.script import ControlError


def defer_toggle(app: AppPort, state: HostState) -> bool:
    """``A`` on a supervised host: ask the supervisor (True), else leave it to the app."""
    sup = shown_supervisor(state)
    ask = getattr(state.bridge, "request_supervisor_policy", None)
    if sup is None or ask is None:
        return False
    enabled = not sup.auto

    async def request() -> None:
        try:
            await ask(enabled)
        except ControlError as exc:
            app.notify(f"the supervisor was not asked: {exc}", severity="error")
            return
        word = "on" if enabled else "off"
        app.notify(f"asked supervisor PID {sup.pid} to turn auto-restart {word}", timeout=4)

    app.run_worker(
        request(), name=f"supervisor policy {state.key}", group="supervisor", exit_on_error=False
    )
    return True
