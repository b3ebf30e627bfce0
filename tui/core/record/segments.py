"""One segment file: a gzip stream with a sync flush after every record (so ``zcat`` reads it).

Each record is one JSON line. After it is written the compressor is sync-flushed and the file
flushed: a killed writer loses nothing written, the compression window still spans records
(a process table repeats), and a cleanly closed segment ends as a whole gzip file. A reader
takes a segment up to its last whole record: a file cut mid-stream (a crash, a full disk, a
copy in progress) yields the records before the cut and a note saying so. A record that is not
a JSON object (or is nested too deep, or is over ``RECORD_MAX``) is skipped with a note, bytes
after the gzip stream's end are a note, and no segment is read past ``SEGMENT_MAX``.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from dflash_tui.core.base.lines import LineSplitter

GZIP = 31  # zlib's wbits for a gzip header and trailer
LEVEL = 6
CHUNK = 1 << 16
PREFIX, SUFFIX = "seg-", ".jsonl.gz"


def segment_name(first_time: float, pid: int) -> str:
    """Sortable by the time of the first sample (ms); the PID keeps two writers apart."""
    return f"{PREFIX}{round(first_time * 1000):015d}-{pid}{SUFFIX}"


def thin_level(path: Path) -> int:
    """1 for a segment as written; N for one thinned to 1 sample in N (``seg-...-PID.tN...``)."""
    stem = path.name[: -len(SUFFIX)]
    _, dot, level = stem.rpartition(".t")
    return int(level) if dot and level.isdigit() else 1


def thinned_name(path: Path, level: int) -> str:
    stem = path.name[: -len(SUFFIX)]
    if thin_level(path) > 1:
        stem = stem.rpartition(".t")[0]
    return f"{stem}.t{level}{SUFFIX}"


def segment_files(record_dir: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(record_dir))
    except OSError:
        return []
    return [record_dir / n for n in names if n.startswith(PREFIX) and n.endswith(SUFFIX)]


class SegmentWriter:
    """Appends records to a new segment file; ``close`` ends the gzip stream."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: BinaryIO = open(path, "xb")  # noqa: SIM115 (closed in close())
        self.z = zlib.compressobj(LEVEL, zlib.DEFLATED, GZIP)
        self.size = 0  # compressed bytes written
        self.records = 0

    def write(self, line: bytes) -> None:
        data = self.z.compress(line) + self.z.flush(zlib.Z_SYNC_FLUSH)
        self.file.write(data)
        self.file.flush()  # to the kernel: a killed process loses nothing written
        self.size += len(data)
        self.records += 1

    def close(self) -> None:
        if self.file.closed:
            return
        data = self.z.flush(zlib.Z_FINISH)
        self.file.write(data)
        self.size += len(data)
        self.file.flush()
        os.fsync(self.file.fileno())  # a finished segment survives a power cut
        self.file.close()


# Caps on what one segment may cost to read: a record is a probe line (itself capped at
# PROBE_LINE_MAX) plus its diagnosis; a segment holds a few hundred records. A file past
# either is someone else's or damaged: the excess is skipped with a note, never held whole.
RECORD_MAX = 48 << 20  # bytes of one decompressed record line
SEGMENT_MAX = 512 << 20  # decompressed bytes read from one segment
NOTES_MAX = 5  # notes said per segment; the rest are counted


@dataclass
class SegmentRead:
    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True  # the gzip stream ended properly, every record read
    notes: list[str] = field(default_factory=list)  # what was cut or skipped, said for the user
    skipped: int = 0  # records that could not be read
    numbers: list[int] = field(default_factory=list)  # each record's line in the segment

    @property
    def note(self) -> str | None:
        return "; ".join(self.notes) if self.notes else None

    def skip(self, number: int, why: str) -> None:
        """Record ``number`` is left out; the first few are said, the rest counted."""
        self.skipped += 1
        self.complete = False
        if self.skipped <= NOTES_MAX:
            self.notes.append(f"{self.path.name}: record {number} {why}: skipped")


def _parse(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One record line as a JSON object, or why it is not one."""
    try:
        rec = json.loads(line)
    except RecursionError:
        return None, "is nested too deep to be a record"
    except ValueError:
        return None, "is not JSON"
    if not isinstance(rec, dict):
        return None, "is not a JSON object"
    return rec, None


class _Lines:
    """A segment's decompressed lines, inflated a chunk at a time: a line over ``RECORD_MAX``
    is dropped as it streams (its size said), so memory never holds more than one capped line."""

    def __init__(self, seg: SegmentRead) -> None:
        self.seg = seg
        self.z = zlib.decompressobj(GZIP)
        self.split = LineSplitter(RECORD_MAX)
        self.number = 0  # lines ended so far
        self.total = 0  # decompressed bytes so far
        self.error: str | None = None
        self.capped = False  # stopped at SEGMENT_MAX

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.total += len(data)
        for line in self.split.feed(data):
            self.number += 1
            if isinstance(line, int):
                self.seg.skip(self.number, f"is {line:,} bytes, over the cap of {RECORD_MAX:,}")
            else:
                yield line

    def read(self, f: BinaryIO) -> Iterator[bytes]:
        """Every whole line of the stream in ``f``, up to its end, a cut or ``SEGMENT_MAX``."""
        while not self.z.eof:
            pending = self.z.unconsumed_tail or f.read(CHUNK)
            if not pending:  # the file ends: what zlib still holds, then the stream's end or not
                try:
                    yield from self.feed(self.z.flush())
                except zlib.error as exc:
                    self.error = str(exc)
                return
            try:
                data = self.z.decompress(pending, CHUNK)  # bounded: a zip bomb inflates slowly
            except zlib.error as exc:  # corrupt past here: keep what came before
                self.error = str(exc)
                return
            yield from self.feed(data)
            if self.total > SEGMENT_MAX:
                self.capped, self.seg.complete = True, False
                self.seg.notes.append(
                    f"{self.seg.path.name}: over {SEGMENT_MAX:,} bytes decompressed: "
                    f"read up to there, the rest skipped"
                )
                return

    def trailing(self, f: BinaryIO) -> int:
        """Bytes after the gzip stream's end (none in a segment as written)."""
        here = f.tell()
        return len(self.z.unused_data) + os.fstat(f.fileno()).st_size - here


def stream_segment(seg: SegmentRead) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each readable record of ``seg.path`` with its line number, one at a time (memory holds
    one record, not the segment); once the stream is spent, ``seg`` says what was skipped or
    cut. ``seg.records`` is left as it is: the caller keeps what it needs."""
    lines = _Lines(seg)
    count = 0
    try:
        with open(seg.path, "rb") as f:
            for line in lines.read(f):
                rec, why = _parse(line)
                if rec is None:
                    seg.skip(lines.number, why or "unreadable")
                else:
                    count += 1
                    yield lines.number, rec
            garbage = lines.trailing(f) if lines.z.eof else 0
    except OSError as exc:
        seg.complete = False
        seg.notes.append(f"{seg.path.name}: unreadable ({exc.strerror or exc})")
        return
    _end_notes(seg, lines, garbage, count)


def _end_notes(seg: SegmentRead, lines: _Lines, garbage: int, count: int) -> None:
    name = seg.path.name
    if seg.skipped > NOTES_MAX:
        seg.notes.append(f"{name}: {seg.skipped} records skipped in all")
    if garbage:
        seg.complete = False
        seg.notes.append(f"{name}: {garbage:,} bytes after the end of its data ignored")
    elif not lines.z.eof and not lines.capped:
        seg.complete = False
        why = f" ({lines.error})" if lines.error else ""
        tail = lines.split.pending
        cut = f", {tail} bytes of a cut record dropped" if tail else ""
        seg.notes.append(
            f"{name} ends mid-stream{why}: read up to its last whole record "
            f"({count} records{cut}); a writer cut off, or one still writing"
        )


def read_segment(path: Path) -> SegmentRead:
    """Every readable record of the segment; a note for each thing skipped or cut."""
    seg = SegmentRead(path)
    for number, rec in stream_segment(seg):
        seg.records.append(rec)
        seg.numbers.append(number)
    return seg


def iter_records(record_dir: Path) -> Iterator[SegmentRead]:
    for path in segment_files(record_dir):
        yield read_segment(path)
