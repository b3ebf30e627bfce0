"""Process rows kept from a source's previous sample (every sample holds every process row of
a host, and most rows are as they were a second ago: parsing them all again is waste).

Whoever reads one host's samples in order (a probe stream, the in-process probe, a recording
being read back) holds a ``RowMemo``: the rows of its latest sample, each with the record parsed
from it. The memo belongs to that source, not to the host's name: two hosts that call
themselves the same (containers of one image, one machine standing for several) must not
take each other's rows, or every row of every sample is compared and parsed again.

A row whose probe dict is the one kept (a stream's unchanged row, snapshot_delta.py) or equals
it is that same (frozen) record: an identity test or a dict comparison instead of a conversion
per field. Python's ``==`` says ``True == 1``, where the conversion tells a bool from a number
(a bool is no PID or size): rows holding a bool anywhere are never kept nor taken, so a kept
row is always what parsing would give. A probe dict is never edited once handed over (a JSON
line's are new; the in-process probe's rows stand unedited, tui/core/probe/procs.py), so the
kept dict is the row as it was parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class RowMemo:
    """One sample source's latest process rows: PID -> (the probe dict, the record parsed
    from it). Only the latest sample's rows are kept: at most one table's worth."""

    def __init__(self) -> None:
        self.kept: dict[int, tuple[dict[str, Any], Any]] = {}


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
    """One sample's parsing of its process rows: ``parse`` each raw row, or take the record of
    the equal row of ``memo`` (the source's previous sample; None: parse every row); ``keep``
    makes this sample's rows the ones ``memo`` holds."""

    def __init__(self, memo: RowMemo | None, parse: Callable[[dict[str, Any]], T | None]) -> None:
        self.memo, self.parse = memo, parse
        self.old = memo.kept if memo is not None else {}
        self.new: dict[int, tuple[dict[str, Any], Any]] = {}

    def __call__(self, raw: dict[str, Any]) -> Any:
        pid = raw.get("pid")
        if self.memo is None or type(pid) is not int:
            return self.parse(raw)  # no PID to keep it by (it is rejected or odd): parse
        was = self.old.get(pid)
        if was is not None and was[0] is raw:  # a stream's unchanged row (snapshot_delta.py)
            self.new[pid] = was  # kept only if plain: it stays
            return was[1]
        if was is not None and was[0] == raw:
            if _plain(raw):
                # The record stays, kept with this dict: the stream hands this same dict
                # again while the row is unchanged (after a whole table, every row is a new
                # dict equal to the old one; keeping the old dict would compare every row by
                # value for the rest of the stream).
                self.new[pid] = (raw, was[1])
                return was[1]
            return self.parse(raw)
        row = self.parse(raw)
        if row is not None and _plain(raw):
            self.new[pid] = (raw, row)
        return row

    def keep(self) -> None:
        if self.memo is not None:
            self.memo.kept = self.new
