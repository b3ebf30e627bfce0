"""The terminal notification the app can send (pure): the bell, or a desktop notification by
OSC 9 (``ESC ] 9 ; text BEL``: e.g. iTerm2, WezTerm, kitty) or OSC 777
(``ESC ] 777 ; notify ; title ; body BEL``: e.g. urxvt's notify extension, foot). Opt-in
(``[alerts] terminal``); the text inside the sequence is an alert's, which quotes a job's own
words, so it goes through ``clean_line`` first: no ESC, BEL or other control byte can end the
OSC early or start another sequence."""

from __future__ import annotations

from dflash_tui.core.alerts.alert import Alert
from dflash_tui.core.base.text import clean_line

BEL = "\x07"
MAX_CHARS = 200  # a desktop notification shows a line or two


def _safe(text: str, limit: int = MAX_CHARS) -> str:
    return clean_line(" ".join(text.split()), limit)


def terminal_sequence(kind: str, alert: Alert) -> str:
    """What to write to the terminal for ``alert``; "" when ``kind`` is off (or unknown)."""
    if kind == "bell":
        return BEL
    if kind == "osc9":
        return f"\x1b]9;{_safe(f'{alert.title}: {alert.message}')}{BEL}"
    if kind == "osc777":
        title = _safe(alert.title, 80).replace(";", ",")  # a ';' would start the body
        return f"\x1b]777;notify;{title};{_safe(alert.message)}{BEL}"
    return ""
