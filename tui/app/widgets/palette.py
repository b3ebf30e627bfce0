"""Colours for Rich ``Text`` built in Python, read from the current Textual theme.

Widgets that render ``Text`` (GPU panels, tree labels, findings) cannot use CSS variables, so
they ask for a Palette and rebuild when the theme changes. Every coloured element also carries
its meaning as text, so the high-contrast theme (or no colour at all) loses nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.style import Style
from textual.color import Color, ColorParseError

from dflash_tui.app.widgets.themes import CHIP_DEFAULTS
from dflash_tui.core.diagnosis.severity import LEVELS

# How bad each GPU label is, for its chip colour (idle is worse while a run should be active).
SEVERITIES = LEVELS  # the levels of tui/core/diagnosis/severity.py; colours only here
_TEXT = {"ok": "success", "info": "secondary", "warning": "warning", "error": "error"}
_MADE_MAX = 64  # styles kept per palette (two kinds, a few levels, bold or not: about 20)


def _resolve(variables: Mapping[str, str], name: str, fallback: str) -> Color:
    value = variables.get(name, fallback)
    for _ in range(4):  # defaults may point at another variable ("$success")
        if not value.startswith("$"):
            break
        value = variables.get(value[1:], fallback)
    try:
        return Color.parse(value)
    except ColorParseError:
        return Color.parse("#888888")


@dataclass(frozen=True)
class Palette:
    chips: Mapping[str, tuple[str, str]]  # severity -> (background, foreground) hex
    text: Mapping[str, str]  # severity -> foreground hex on the normal background
    muted: str
    accent: str
    # Each style made once per palette: a sample's rows ask for the same few thousands of
    # times, and a new Rich Style is a construction, then a hash made anew wherever it is
    # looked up (Rich styles are immutable: one object serves every Text).
    made: dict[tuple[str, str, bool], Style] = field(
        default_factory=dict, compare=False, repr=False
    )

    def chip(self, severity: str) -> Style:
        style = self.made.get(("chip", severity, True))
        if style is None:
            bg, fg = self.chips.get(severity, self.chips["info"])
            style = self._keep(("chip", severity, True), Style(bgcolor=bg, color=fg, bold=True))
        return style

    def fg(self, severity: str, bold: bool = False) -> Style:
        style = self.made.get(("fg", severity, bold))
        if style is None:
            made = Style(color=self.text.get(severity, self.muted), bold=bold)
            style = self._keep(("fg", severity, bold), made)
        return style

    def _keep(self, key: tuple[str, str, bool], style: Style) -> Style:
        if len(self.made) >= _MADE_MAX:  # a bound, not an LRU: callers ask for a few levels
            self.made.clear()
        self.made[key] = style
        return style


def palette_from(variables: Mapping[str, str]) -> Palette:
    chips: dict[str, tuple[str, str]] = {}
    text: dict[str, str] = {}
    for sev in SEVERITIES:
        bg = _resolve(variables, f"chip-{sev}", CHIP_DEFAULTS[f"chip-{sev}"])
        chips[sev] = (bg.hex6, bg.get_contrast_text(1.0).hex6)
        text[sev] = _resolve(variables, f"text-{_TEXT[sev]}", bg.hex6).hex6
    # foreground-muted carries alpha: composite it on the background for a solid colour.
    back = _resolve(variables, "background", "#000000")
    muted = (back + _resolve(variables, "foreground-muted", "#888888")).hex6
    accent = _resolve(variables, "text-accent", "#ffa62b").hex6
    return Palette(chips, text, muted, accent)


FALLBACK = palette_from(
    {"success": "#4CC38A", "secondary": "#8B7CFF", "warning": "#F2B33D", "error": "#FF5C6C"}
)


_CACHE: dict[tuple[str, int], Palette] = {}


def palette_for(theme: object) -> Palette:
    """The palette of a ``textual.theme.Theme`` (cached per theme object)."""
    from textual.theme import Theme

    if not isinstance(theme, Theme):
        return FALLBACK
    key = (theme.name, id(theme))
    if key not in _CACHE:
        variables = {**theme.to_color_system().generate(), **theme.variables}
        _CACHE[key] = palette_from(variables)
    return _CACHE[key]
