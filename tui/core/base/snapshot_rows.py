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
from itertools import compress
from operator import is_not
from typing import Any, TypeVar

T = TypeVar("T")
_FLAT = frozenset((bool, list, dict))  # what a row's list must not hold to be plain


class RowMemo:
    """One sample source's latest process rows: PID -> (the probe dict, the record parsed
    from it). Only the latest sample's rows are kept: at most one table's worth."""

    def __init__(self) -> None:
        self.kept: dict[int, tuple[dict[str, Any], Any]] = {}
        # The latest sample's rows as given and their records, position for position, while
        # ``kept`` holds exactly those rows, each under its own PID (every row well formed,
        # plain, its PID unique: a real table): None otherwise. The next sample's rows that
        # are these very dicts are these records, without a look at each (``KeptRows.table``).
        self.last: tuple[list[Any], tuple[Any, ...]] | None = None
        # Those records by PID, when a sample's own index was made from the one before
        # (``KeptRows.index``); None: made from the table when asked.
        self.index: dict[int, Any] | None = None
        # One process group's places in that table (the run's: its PGID, the places of the
        # records whose group it is), when a sample's was made from the one before
        # (``KeptRows.group``); None: made from the table.
        self.group: tuple[int, tuple[int, ...]] | None = None
        # The few rows of the other kinds (GPUs, GPU processes), by key, at their places
        # among the sample's rows: (the dict, its record, that checked, the check's notes),
        # None where a row is not kept (not plain, or no record).
        self.places: dict[str, list[tuple[dict[str, Any], Any, Any, tuple[str, ...]] | None]] = {}


def _plain(raw: dict[str, Any]) -> bool:
    """No bool in the row or in a list of it, and no deeper nesting (nothing ``==`` would
    equate with another value that parses otherwise)."""
    types = set(map(type, raw.values()))  # the row's few types, not each of its values
    if bool in types or dict in types:
        return False
    if list in types:
        for v in raw.values():
            if type(v) is list and not _FLAT.isdisjoint(map(type, v)):
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
        # Positions whose row is not the previous sample's dict there, once ``table`` took the
        # rest as they were (None: every row went through ``__call__``).
        self.changed: list[int] | None = None
        self.before: tuple[Any, ...] = ()  # the previous sample's records, when ``changed``
        self.was_index: dict[int, Any] | None = None  # and their index, if the memo had it
        self.was_group: tuple[int, tuple[int, ...]] | None = None  # and a group's places

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

    def table(self, given: list[Any]) -> tuple[Any, ...] | None:
        """The records of ``given`` (a sample's rows, within the cap) when most of them are
        the previous sample's very dicts at the same places (a stream's unchanged rows,
        snapshot_delta.py): the previous records, each changed row through ``__call__``.
        None (nothing kept, nothing changed here) when they must go row by row: another
        length, most rows new (a whole table), or a changed row that is not a record (its
        error is said by the row-by-row pass). What it gives is what the row-by-row pass
        gives: an unchanged dict is an unedited one (module docstring), and the memo's
        record of it is what parsing gives."""
        memo = self.memo
        last = memo.last if memo is not None else None
        if memo is None or last is None or len(given) != len(last[0]):
            return None
        rows, before = last
        # From here the memo's index is no longer the latest sample's: ``index`` makes the
        # next from it, or nothing does.
        self.was_index, memo.index = memo.index, None
        self.was_group, memo.group = memo.group, None
        n = len(given)
        changed = list(compress(range(n), map(is_not, given, rows)))
        if 2 * len(changed) > n:
            return None
        out = list(before)
        for i in changed:
            raw = given[i]
            row = self(raw) if isinstance(raw, dict) else None
            if row is None:
                self.new = {}
                return None
            out[i] = row
        # ``kept`` held exactly the previous rows: the changed places' old rows leave, their
        # new ones (the plain ones) come; it still holds exactly the table's rows when it
        # holds as many (each changed row kept under a PID that no other row has).
        kept = memo.kept
        for i in changed:
            del kept[rows[i]["pid"]]
        kept.update(self.new)
        found = tuple(out)
        whole = len(kept) == n
        memo.last = (given, found) if whole else None
        self.changed, self.before = changed, before
        return found

    def keep(self, given: list[Any], out: tuple[Any, ...]) -> None:
        """This sample's rows are the ones ``memo`` holds; ``given`` and ``out``: the rows
        and records of a row-by-row pass (every row a record: ``memo.last`` may hold them)."""
        memo = self.memo
        if memo is None or self.changed is not None:
            return  # ``table`` left the memo as it is to be
        memo.kept, memo.index, memo.group = self.new, None, None
        whole = len(out) == len(given) == len(self.new)
        memo.last = (given, out) if whole else None

    def index(self, out: tuple[Any, ...], key: Callable[[Any], int]) -> dict[int, Any] | None:
        """``{key(r): r for r in out}``, this sample's records by PID, for a source whose
        rows are a real table (``memo.last``: each PID unique, so which of two equal PIDs
        wins never arises): made from the previous sample's (its changed places' records out,
        their new ones in) when ``table`` made ``out``, else from ``out``. None otherwise
        (the snapshot makes its own when asked)."""
        memo = self.memo
        if memo is None or memo.last is None or memo.last[1] is not out:
            return None
        old, memo.index = self.was_index, None
        if self.changed is None or old is None:
            new = {key(r): r for r in out}
        else:
            new = old.copy()  # the previous snapshot holds ``old``: never edited
            for i in self.changed:
                del new[key(self.before[i])]
            for i in self.changed:
                new[key(out[i])] = out[i]
        memo.index = new
        return new

    def group(self, out: tuple[Any, ...], pgid: int) -> tuple[int, ...] | None:
        """The places in ``out`` of the records whose ``pgid`` is ``pgid``, in order: the
        previous sample's places when ``table`` made ``out`` and no changed row joined or
        left the group, else found in ``out``. None where ``index`` gives none."""
        memo = self.memo
        if memo is None or memo.last is None or memo.last[1] is not out:
            return None
        old, memo.group = self.was_group, None
        changed, before = self.changed, self.before
        if (
            changed is not None
            and old is not None
            and old[0] == pgid
            and all((before[i].pgid == pgid) is (out[i].pgid == pgid) for i in changed)
        ):
            places = old[1]
        else:
            places = tuple(i for i, r in enumerate(out) if r.pgid == pgid)
        memo.group = (pgid, places)
        return places


class PlacedRows:
    """One sample's rows of a kind with few of them (GPUs, GPU processes), each parsed, then
    range-checked: a row equal to the one at its place in the source's previous sample (and
    plain, as for process rows) is that row's record, checked record and notes again (an idle
    GPU's readings stand still; a GPU process's memory, mostly). ``memo`` None: every row."""

    def __init__(
        self, memo: RowMemo | None, key: str, parse: Callable[[dict[str, Any]], T | None]
    ) -> None:
        self.memo, self.key, self.parse = memo, key, parse
        self.old = memo.places.get(key, []) if memo is not None else []
        self.seen: list[tuple[dict[str, Any], Any, Any]] = []  # (dict, record, entry taken)

    def __call__(self, raw: dict[str, Any]) -> Any:
        k, old = len(self.seen), self.old  # its place among the sample's dicts of this kind
        was = old[k] if k < len(old) else None
        if was is not None and (was[0] is raw or (was[0] == raw and _plain(raw))):
            self.seen.append((raw, was[1], was))
            return was[1]
        row = self.parse(raw)
        self.seen.append((raw, row, None))
        return row

    def checked(self, check: Callable[[Any, list[str]], Any], errors: list[str]) -> tuple[Any, ...]:
        """Each record through ``check`` (notes said in ``errors``), in order, or the previous
        sample's result and notes for a record taken again (the check of a record is its
        own: the same notes)."""
        out: list[Any] = []
        new: list[tuple[dict[str, Any], Any, Any, tuple[str, ...]] | None] = []
        for raw, row, was in self.seen:
            if row is None:
                new.append(None)
                continue
            if was is not None:
                done, notes = was[2], was[3]
                errors.extend(notes)
            else:
                mark = len(errors)
                done = check(row, errors)
                notes = tuple(errors[mark:])
            out.append(done)
            new.append((raw, row, done, notes) if was is not None or _plain(raw) else None)
        if self.memo is not None:
            self.memo.places[self.key] = new
        return tuple(out)
