"""Untrusted text in a toast (launcher errors, log lines, a filter) never parses as markup."""

from __future__ import annotations

from support import until

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config


async def test_hostile_notification_is_shown_as_text() -> None:
    app = DflashApp(Config(), source=ScriptedSource(scenes.seed_incident()))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        app.notify(
            "docker: invalid mount [/data] [@click=app.quit]x[/] [bold red]", severity="error"
        )
        await pilot.pause(0.3)
        assert app.is_running and app.return_code is None
        (toast,) = app._notifications
        assert "[/data]" in toast.message and toast.markup is False
