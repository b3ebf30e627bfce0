"""One rule for memory on every screen: below 1 GiB in whole MiB, from
1 GiB on in GiB with one decimal; a used/total pair in the total's unit, said once. Never
``68G``, ``70000 MiB`` or ``0M/140G``."""

from __future__ import annotations

import re

import pytest
from support import screen_text, until

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.text import mib, mib_pair

QUANTITY = re.compile(r"(\d[\d.,]*)\s?(MiB|GiB|MB|GB|M|G)(?![A-Za-z])")


def test_the_rule() -> None:
    assert [mib(x) for x in (0, 500, 1023, 1024, 70000, 143771, None)] == [
        "0 MiB", "500 MiB", "1023 MiB", "1.0 GiB", "68.4 GiB", "140.4 GiB", "?",
    ]  # fmt: skip
    assert mib_pair(0, 143771) == "0.0/140.4 GiB"
    assert mib_pair(300, 512) == "300/512 MiB"
    assert mib_pair(None, 143771) == "?/140.4 GiB"
    assert mib_pair(None, None) == "?/?"


def follows_the_rule(text: str) -> list[str]:
    """Every memory quantity of ``text`` that breaks the rule."""
    bad = []
    for m in QUANTITY.finditer(text):
        number, unit = m.group(1), m.group(2)
        if unit == "GiB" and re.fullmatch(r"\d+\.\d", number):
            continue
        if unit == "GiB" and "/" in text[max(0, m.start() - 8) : m.start() + 1]:
            continue  # the total of a pair; its number is checked by the pattern below
        if unit == "MiB" and number.isdigit() and int(number) < 1024:
            continue
        bad.append(m.group(0))
    return bad


@pytest.mark.parametrize("scene", ["healthy_run", "seed_incident"])
async def test_memory_on_screen_follows_one_rule(scene: str) -> None:
    snaps = getattr(scenes, scene)()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.pause(0.3)
        text = screen_text(app)
    assert follows_the_rule(text) == [], text
    pairs = re.findall(r"\S+/\S+ GiB", text)
    assert pairs and all(re.fullmatch(r"\d+\.\d/\d+\.\d GiB", p) for p in pairs), pairs
