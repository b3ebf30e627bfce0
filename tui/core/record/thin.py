"""Thinning an old segment: keep 1 sample in N rather than drop the segment (size cap).

What is kept whole: every log line (a dropped sample's lines and gap notes move to the next
kept sample of the same log), every sample that carries a timeline event (launch, first step,
crash, restart), and the segment's first and last samples. What goes: the GPU readings,
process tables, labels and findings of the samples in between.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dflash_tui.core.record.codec import Decoder, Encoder, dumps
from dflash_tui.core.record.segments import (
    SegmentRead,
    SegmentWriter,
    stream_segment,
    thin_level,
    thinned_name,
)

_Pending = dict[str, dict[str, Any]]  # log path -> the dropped samples' log entry, merged


def _carry(pending: _Pending, logs: list[dict[str, Any]]) -> None:
    """Add a dropped sample's log lines (and gap notes) to what the next kept one carries."""
    for lg in logs:
        path = lg.get("path")
        if not isinstance(path, str):
            continue
        held = pending.setdefault(path, {**lg, "lines": [], "gaps": []})
        base = len(held["lines"])
        held["gaps"] += [[i + base, t] for i, t in lg.get("gaps") or ()]
        held["lines"] += list(lg.get("lines") or ())


def _merge(pending: _Pending, logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for lg in logs:
        held = pending.pop(lg.get("path"), None)  # type: ignore[arg-type]
        if held is None:
            out.append(lg)
            continue
        base = len(held["lines"])
        gaps = held["gaps"] + [[i + base, t] for i, t in lg.get("gaps") or ()]
        out.append({**lg, "lines": held["lines"] + list(lg.get("lines") or ()), "gaps": gaps})
    out += list(pending.values())  # logs the kept sample no longer lists
    pending.clear()
    return out


def _steps(pending: dict[str, Any] | None, steps: dict[str, Any] | None) -> dict[str, Any] | None:
    """A dropped sample's step points go on with the next kept one (the History tab's curves
    are the whole run's); a new stream (another path, read from its start) starts afresh."""
    if not steps:
        return pending
    if pending is None or steps.get("path") != pending.get("path") or steps.get("from") == 0:
        return steps
    points = list(pending.get("points") or []) + list(steps.get("points") or [])
    return {**pending, "points": points}


def _samples(seg: SegmentRead, meta: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """The segment's samples one at a time, each with whether it is the last (one read ahead).
    The segment's meta record (the writer puts it before any sample) is put into ``meta``
    by the time the first sample comes."""
    held: dict[str, Any] | None = None
    for _, rec in stream_segment(seg):
        if rec.get("k") == "meta" and held is None and not meta:
            meta.update(rec)
        if rec.get("k") != "s" or not isinstance(rec.get("snap"), dict):
            continue
        if held is not None:
            yield held, False
        held = rec
    if held is not None:
        yield held, True


def thin_segment(path: Path, factor: int) -> tuple[Path, int]:
    """Rewrite ``path`` keeping 1 sample in ``factor``: the new file (its name says the level,
    ``seg-...-PID.tN.jsonl.gz``) and its size in bytes. The segment is read as a stream, one
    record held at a time: a segment can be hundreds of MiB decompressed, and memory a
    process once grew to is rarely given back to the system."""
    level = thin_level(path) * factor
    tmp = path.with_name(path.name + ".thin")
    tmp.unlink(missing_ok=True)
    out = SegmentWriter(tmp)
    try:
        _thin_into(out, SegmentRead(path), factor, level)
        out.close()
    except BaseException:
        out.close()
        tmp.unlink(missing_ok=True)
        raise
    new = path.with_name(thinned_name(path, level))
    os.replace(tmp, new)
    if new != path:
        path.unlink()
    return new, out.size


def _thin_into(out: SegmentWriter, seg: SegmentRead, factor: int, level: int) -> None:
    meta: dict[str, Any] = {}
    samples = _samples(seg, meta)
    first = next(samples, None)
    out.write(dumps({"k": "meta", **meta, "thin": level}))
    if first is None:
        return
    dec, enc = Decoder(), Encoder()
    pending: _Pending = {}
    steps: dict[str, Any] | None = None
    for i, (rec, last) in enumerate(itertools.chain([first], samples)):
        d = dec.snap(rec)
        if not (i % factor == 0 or last or rec.get("events")):
            _carry(pending, d.get("logs") or [])
            steps = _steps(steps, d.get("steps"))
            continue
        d["logs"] = _merge(pending, d.get("logs") or [])
        d["steps"], steps = _steps(steps, d.get("steps")), None
        rows = {r.get("pid"): r for r in d.pop("procs")}
        out.write(dumps(enc.record(d, rows, rec.get("diag"), rec.get("events") or [])))
