"""One segment file: a gzip stream with a sync flush after every record (so ``zcat`` reads it).

Each record is one JSON line. After it is written the compressor is sync-flushed and the file
flushed: a killed writer loses nothing written, the compression window still spans records
(a process table repeats), and a cleanly closed segment ends as a whole gzip file. A reader
takes a segment up to its last whole record: a file cut mid-stream (a crash, a full disk, a
copy in progress) yields the records before the cut and a note saying so.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

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


@dataclass
class SegmentRead:
    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True  # the gzip stream ended properly
    note: str | None = None  # what was cut, said for the user


def _inflate(path: Path) -> tuple[bytes, bool, str | None]:
    """The decompressed bytes, whether the stream ended, and the error that stopped it."""
    z = zlib.decompressobj(GZIP)
    out: list[bytes] = []
    error: str | None = None
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            try:
                out.append(z.decompress(chunk))
            except zlib.error as exc:  # corrupt past here: keep what came before
                error = str(exc)
                break
            if z.eof:
                break
    if error is None:
        try:
            out.append(z.flush())
        except zlib.error as exc:
            error = str(exc)
    return b"".join(out), z.eof, error


def read_segment(path: Path) -> SegmentRead:
    """Every whole record of the segment; a note when it ends before its end."""
    seg = SegmentRead(path)
    try:
        data, ended, error = _inflate(path)
    except OSError as exc:
        seg.complete, seg.note = False, f"{path.name}: unreadable ({exc.strerror or exc})"
        return seg
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" when the data ends on a whole record
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except ValueError:
            seg.note = f"{path.name}: record {i + 1} unreadable: read up to it"
            seg.complete = False
            return seg
        if isinstance(rec, dict):
            seg.records.append(rec)
    if not ended:
        seg.complete = False
        why = f" ({error})" if error else ""
        cut = f", {len(tail)} bytes of a cut record dropped" if tail else ""
        seg.note = (
            f"{path.name} ends mid-stream{why}: read up to its last whole record "
            f"({len(seg.records)} records{cut}); a writer cut off, or one still writing"
        )
    return seg


def iter_records(record_dir: Path) -> Iterator[SegmentRead]:
    for path in segment_files(record_dir):
        yield read_segment(path)
