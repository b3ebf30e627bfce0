"""The command palette shows its texts as written, never as markup.

``[restart]`` in a help text was read as a markup tag and the palette showed ``(config )``;
a host label with brackets (labels come from the user's config) must show as typed too.
"""

from __future__ import annotations

from support import screen_text, until

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config, HostConfig

SIZE = (120, 40)


async def test_palette_texts_are_not_markup() -> None:
    hosts = (HostConfig(name="[b]gpu-a"), HostConfig(name="gpu-[red]b"))
    sources = [ScriptedSource(scenes.healthy_run(samples=1)) for _ in hosts]
    app = DflashApp(Config(hosts=hosts), sources=sources)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 1)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"auto")
        await until(pilot, lambda: "(config [restart])" in screen_text(app), timeout=5.0)
        for _ in "auto":
            await pilot.press("backspace")
        await pilot.press(*"show host")
        await until(pilot, lambda: "Show host [b]gpu-a" in screen_text(app), timeout=5.0)
        assert "Show host gpu-[red]b" in screen_text(app)
