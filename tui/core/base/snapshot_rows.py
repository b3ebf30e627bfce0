"""Process rows kept from a host's previous sample (every sample holds every process row of
every host, and most rows are as they were a second ago: parsing them all again is waste).

A row whose probe dict equals the one it was parsed from last time is that same (frozen)
record: a dict comparison instead of a conversion per field. Python's ``==`` says ``True ==
1``, where the conversion tells a bool from a number (a bool is no PID or size): rows holding
a bool anywhere are never kept nor taken, so a kept row is always what parsing would give.
A probe dict is never edited once handed over (a JSON line's are new; the in-process probe's
rows stand unedited, tui/core/probe/procs.py), so the kept dict is the row as it was parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Hosts (the probe's ``host`` names) kept; more forget them all and start over. Well above the
# hosts one app watches (64 x 8 GPUs is the scale it is made for): past it every host would
# forget the others' rows in turn, and every row of every sample would be parsed again.
MAX_HOSTS = 256

# host -> PID -> (the probe dict, the record parsed from it), the host's latest sample's rows
_KEPT: dict[str, dict[int, tuple[dict[str, Any], Any]]] = {}


def _plain(raw: dict[str, Any]) -> bool:
    """No bool in the row or in a list of it, and no deeper nesting (nothing ``==`` would
    equate with another value that parses otherwise)."""
    for v in raw.values():
        t = type(v)
        if t is bool or t is dict:
            return False
        if t is list and any(type(x) in (bool, list, dict) for x in v):
            return False
    return True


class KeptRows:
    """One sample's parsing of one host's rows: ``parse`` each raw row, or take the record of
    an equal row of the previous sample; ``keep`` makes this sample's rows the ones kept."""

    def __init__(self, host: str, parse: Callable[[dict[str, Any]], T | None]) -> None:
        self.host, self.parse = host, parse
        self.old = _KEPT.get(host, {})
        self.new: dict[int, tuple[dict[str, Any], Any]] = {}

    def __call__(self, raw: dict[str, Any]) -> Any:
        pid = raw.get("pid")
        if type(pid) is not int:
            return self.parse(raw)  # no PID to keep it by (it is rejected or odd): parse
        was = self.old.get(pid)
        if was is not None and was[0] is raw:  # a stream's unchanged row (snapshot_delta.py)
            self.new[pid] = was  # kept only if plain: it stays
            return was[1]
        if was is not None and was[0] == raw:
            if _plain(raw):
                self.new[pid] = was  # the kept dict equals this one: it stays
                return was[1]
            return self.parse(raw)
        row = self.parse(raw)
        if row is not None and _plain(raw):
            self.new[pid] = (raw, row)
        return row

    def keep(self) -> None:
        if self.host not in _KEPT and len(_KEPT) >= MAX_HOSTS:
            _KEPT.clear()
        _KEPT[self.host] = self.new
