"""The palette's styles (tui/app/palette.py) are made once and shared: the same object for the
same request, the right colours for each, and a bounded number kept."""

from __future__ import annotations

from rich.style import Style

from dflash_tui.app.widgets.palette import FALLBACK, palette_from


def test_a_style_asked_for_again_is_the_one_made_with_its_colours() -> None:
    pal = palette_from({"success": "#00ff00", "error": "#ff0000"})
    ok = pal.fg("ok", bold=True)
    assert ok is pal.fg("ok", bold=True)
    assert ok == Style(color=pal.text["ok"], bold=True)
    assert pal.fg("ok") == Style(color=pal.text["ok"], bold=False) != ok
    bg, fg = pal.chips["error"]
    assert pal.chip("error") is pal.chip("error") == Style(bgcolor=bg, color=fg, bold=True)
    # Another palette (another theme) keeps its own.
    assert FALLBACK.fg("ok", bold=True) == Style(color=FALLBACK.text["ok"], bold=True)
    assert FALLBACK.fg("ok", bold=True) is not ok


def test_unknown_levels_keep_a_bounded_number_of_styles() -> None:
    pal = palette_from({})
    for i in range(500):
        assert pal.fg(f"level-{i}") == Style(color=pal.muted, bold=False)
    assert len(pal.made) <= 64
