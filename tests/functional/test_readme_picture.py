"""The README's picture, docs/seed.svg, is the app's own rendering of the seed incident: the
replay app (what ``dflash-tui replay --demo seed --at +6m`` shows) at 120x40, exported with
Textual's public ``App.export_screenshot``. The test renders it again and fails when the
committed picture is stale; ``DFLASH_UPDATE_PICTURE=1`` writes the new one instead."""

from __future__ import annotations

import difflib
import html
import os
import re
import time
from pathlib import Path

import pytest

# The one import of the app's module layout: the replay app, as ``dflash-tui replay`` builds it.
from dflash_tui.app.replay import ReplayApp
from dflash_tui.cli.replay import demo_dir
from dflash_tui.core.record.replay import load, parse_time

PICTURE = Path(__file__).resolve().parents[2] / "docs" / "seed.svg"
SIZE = (120, 40)
AT = "+6m"  # the last sample: the moment the seed's operator ran grep and nvidia-smi
UPDATE = "DFLASH_UPDATE_PICTURE=1 pytest tests/functional/test_readme_picture.py"


def normalised(svg: str) -> str:
    """The SVG with Rich's content-hash ids (``terminal-123...``) made one name, so the
    comparison is of what is drawn: every cell's text, colour and style."""
    return re.sub(r"terminal-\d+", "terminal", svg)


def screen_lines(svg: str) -> list[str]:
    """The screen's text, row by row, to say what changed when the picture is stale."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(m[2]), []).append((float(m[1]), html.unescape(m[3])))
    return ["".join(t for _, t in sorted(r)).replace("\xa0", " ") for _, r in sorted(rows.items())]


async def render_seed() -> str:
    rec = load(demo_dir("seed"))
    app = ReplayApp(rec, at=parse_time(AT, rec))
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 20
        while app.cursor.index != len(rec.samples) - 1 and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.3)  # the log pane's flush and width worker
        await pilot.wait_for_scheduled_animations()
        return app.export_screenshot(title="dflash-tui replay --demo seed")


async def test_the_readme_picture_is_the_seed_screen_the_app_renders_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    svg = await render_seed()
    lines = screen_lines(svg)
    # What the picture is for: the seed's three busy GPUs with no memory and the missing log.
    assert any("busy-no-memory" in line for line in lines), lines
    assert any("log-missing" in line for line in lines), lines
    if os.environ.get("DFLASH_UPDATE_PICTURE") == "1":
        PICTURE.write_text(svg, encoding="utf-8")
    old = PICTURE.read_text(encoding="utf-8") if PICTURE.exists() else ""
    if normalised(old) != normalised(svg):
        diff = "\n".join(difflib.unified_diff(screen_lines(old), lines, "docs/seed.svg", "now"))
        what = "its text, below" if diff else "its colours or styles"
        pytest.fail(
            f"docs/seed.svg is stale: the screen differs in {what}.\n"
            f"Look at the new screen, then regenerate it with:\n  {UPDATE}\n{diff}",
            pytrace=False,
        )
