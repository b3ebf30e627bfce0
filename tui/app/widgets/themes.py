"""Themes from TOML files: the bundled ones (``themes/`` installed as ``dflash_tui.themes``) and the
user's (``$XDG_CONFIG_HOME/dflash-tui/themes/*.toml``, default ``~/.config``).

A theme file holds ``textual.theme.Theme``'s fields; a broken file is reported, never fatal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

from dflash_tui.core.base.paths import config_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUNDLED = ("dflash-dark", "dflash-light", "dflash-contrast")
DEFAULT_THEME = "dflash-dark"
_COLOURS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
# Chip backgrounds per severity; themes may override them in [variables].
CHIP_DEFAULTS = {
    "chip-ok": "$success",
    "chip-info": "$secondary",
    "chip-warning": "$warning",
    "chip-error": "$error",
}


class ThemeError(ValueError):
    """A theme file that cannot be used; the message names the file and the problem."""


def theme_from_dict(doc: dict[str, Any], where: str) -> Theme:
    """Validate one parsed theme document and build the Theme."""
    name, primary = doc.get("name"), doc.get("primary")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{where}: 'name' (a string) is required")
    if not isinstance(primary, str):
        raise ThemeError(f"{where}: 'primary' (a colour string) is required")
    kw: dict[str, Any] = {}
    for key in _COLOURS[1:]:
        v = doc.get(key)
        if v is not None and not isinstance(v, str):
            raise ThemeError(f"{where}: {key!r} must be a colour string")
        kw[key] = v
    for key in ("luminosity_spread", "text_alpha"):
        v = doc.get(key)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ThemeError(f"{where}: {key!r} must be a number")
            kw[key] = float(v)
    dark = doc.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{where}: 'dark' must be true or false")
    variables = doc.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in variables.items()
    ):
        raise ThemeError(f"{where}: [variables] must map names to strings")
    theme = Theme(name=name.strip(), primary=primary, dark=dark, variables=dict(variables), **kw)
    try:  # colours are parsed here so a typo is reported now, not when the theme is chosen
        theme.to_color_system().generate()
    except Exception as exc:  # textual raises several error types for bad colours
        raise ThemeError(f"{where}: {exc}") from None
    return theme


def load_theme(source: Traversable | Path) -> Theme:
    try:
        doc = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{source}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{source}: not valid TOML: {exc}") from None
    return theme_from_dict(doc, str(source))


def bundled_dir() -> Traversable:
    """The bundled theme files: the installed ``dflash_tui.themes`` package, else themes/."""
    try:
        return resources.files("dflash_tui.themes")
    except ModuleNotFoundError:  # an editable install that does not map dflash_tui.themes
        return Path(__file__).resolve().parents[3] / "themes"  # tui/app/widgets/ -> the root


def user_dir() -> Path:
    return config_dir() / "themes"


def _toml_files(folder: Traversable | Path) -> Iterable[Traversable | Path]:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except (OSError, FileNotFoundError):
        return []
    return [p for p in entries if p.name.endswith(".toml") and p.is_file()]


def discover(user: Path | None = None) -> tuple[list[Theme], list[str]]:
    """Bundled themes, then the user's (a user theme of the same name wins); plus errors."""
    themes: dict[str, Theme] = {}
    errors: list[str] = []
    for folder in (bundled_dir(), user if user is not None else user_dir()):
        for path in _toml_files(folder):
            try:
                theme = load_theme(path)
            except ThemeError as exc:
                errors.append(str(exc))
                continue
            themes[theme.name] = theme
    missing = [n for n in BUNDLED if n not in themes]
    if missing:
        errors.append(f"bundled themes not found: {', '.join(missing)} (broken install?)")
    return list(themes.values()), errors


class AppThemes:
    """The app's themes: every theme file registered at start (the bundled ones first), the
    config's theme applied once the app runs (a missing or broken one said, the default
    used), and ``t`` cycling through them."""

    def __init__(self, app: App[Any], wanted: str | None) -> None:
        self.app, self.wanted = app, wanted
        themes, self.errors = discover()
        for theme in themes:
            app.register_theme(theme)
        names = [t.name for t in themes]
        self.names = [n for n in BUNDLED if n in names] + [n for n in names if n not in BUNDLED]

    def apply_start(self) -> None:
        app, wanted = self.app, self.wanted or DEFAULT_THEME
        if wanted in app.available_themes:
            app.theme = wanted
        else:
            self.errors.append(
                f"theme {wanted!r} not found; using {DEFAULT_THEME} "
                f"(available: {', '.join(self.names)})"
            )
            if DEFAULT_THEME in app.available_themes:
                app.theme = DEFAULT_THEME
        for err in self.errors:
            app.notify(err, title="theme", severity="warning", timeout=8)

    def next(self) -> None:
        app = self.app
        names = self.names or [app.theme]
        i = names.index(app.theme) if app.theme in names else -1
        app.theme = names[(i + 1) % len(names)]
        app.notify(f"theme: {app.theme}", timeout=2)
