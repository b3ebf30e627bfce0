"""The user's keymap (the config's ``[keys]``, core/base/config_keymap.py) on the app's keys.

Textual applies it (``App.set_keymap``): a main-screen binding whose id the keymap names
answers the keymap's keys instead of its default, and the footer shows them. The ids are the
main screen's (tui/app/keys/table.py; config_keys.KEY_IDS holds the same list, a test checks).
Here: the clashes Textual would only settle silently (two bindings on one key: one of them
would never fire), refused before the app starts; and the key each action answers now, for
the help screen and the hints that name a key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from textual.binding import Binding
from textual.keys import format_key

from dflash_tui.app.keys.table import (
    DESTRUCTIVE,
    HISTORY_HELP,
    HOST_HELP,
    KEY_NAMES,
    KEYS,
    MAIN_BINDINGS,
)
from dflash_tui.core.base.config_keymap import Keymap


def _key_list(keys: str) -> list[str]:
    """The keys of a comma-separated list as Textual names them (``?`` is ``question_mark``);
    the config checked that none is empty."""
    return [b.key for b in Binding.make_bindings([Binding(keys, "")])]


def _bindings() -> Iterable[Binding]:
    return iter(MAIN_BINDINGS)


def binding_ids() -> set[str]:
    """Every id a ``[keys]`` entry may name."""
    return {b.id for b in _bindings() if b.id is not None}


def keymap_problems(keymap: Keymap) -> list[str]:
    """One sentence per key that two main-screen bindings would share once ``keymap`` is
    applied (a remapped key onto another's default, or two remapped onto one)."""
    user = dict(keymap)
    holders: dict[str, list[str]] = {}
    for b in _bindings():
        keys = user.get(b.id or "", b.key)
        name = b.id or b.action.removeprefix("app.")
        for key in _key_list(keys):
            if name not in holders.setdefault(key, []):
                holders[key].append(name)
    problems = []
    for key, names in holders.items():
        mapped = [n for n in names if n in user]
        if len(names) > 1 and mapped:
            others = ", ".join(n for n in names if n != mapped[0])
            problems.append(f"keys.{mapped[0]}: {format_key(key)!r} is {others}'s key too")
    return problems


def key_text(user: Mapping[str, str], binding_id: str, default: str) -> str:
    """The key(s) ``binding_id`` answers, as the help writes them ("ctrl+r / f5")."""
    keys = user.get(binding_id)
    if keys is None:
        return default
    return " / ".join(format_key(k) for k in _key_list(keys))


def help_keys(
    user: Mapping[str, str], read_only: bool, several_hosts: bool, history: bool
) -> list[tuple[str, str]]:
    """The help screen's keys: those that work now, each as the keymap has it."""
    keys = [
        (key_text(user, action, KEY_NAMES.get(k, k)), text)
        for k, action, _, text in KEYS
        if not (read_only and action in DESTRUCTIVE)
    ]
    if several_hosts:
        keys.extend(HOST_HELP)
    if history:
        keys.extend(HISTORY_HELP)
    keys.append(("esc", "close the filter box; cancel a wait (kill grace, release)"))
    keys.append(("ctrl+p", "command palette: every action by name"))
    return keys
