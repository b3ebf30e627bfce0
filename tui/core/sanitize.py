"""Make untrusted text (paths, command lines, log bytes) safe to show in a terminal (pure)."""

from __future__ import annotations

import re

# CSI/OSC/other escape sequences, then any control character left (C0 but tab, DEL, C1).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Control characters shown as ``\\xNN`` so nothing reaches the terminal raw."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def strip_escapes(text: str) -> str:
    """Drop terminal escape sequences (colours, OSC titles), then show what is left printable."""
    return printable(_ANSI.sub("", text))
