"""A recording read back: its samples in order, and the state at any of them (pure reads).

``load`` takes a run directory (its ``record/``) or a record directory. ``Cursor`` folds the
samples through a fresh Tracker and Timeline, exactly as the live app folds them, so the state
at a moment is what a viewer saw then: forward steps fold one sample, a step back folds again
from the start. ``status_at`` is ``status --json``'s document at a moment.
"""

from __future__ import annotations

import bisect
import copy
import datetime as dt
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dflash_train.topology import Topology
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.fields import as_list, as_str
from dflash_tui.core.base.snapshot import LogState, Snapshot
from dflash_tui.core.diagnosis.document import to_json
from dflash_tui.core.diagnosis.timeline import Event, Timeline
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.record.codec import Decoder
from dflash_tui.core.record.segments import iter_records

RUN_MARK = "run-record"  # the event that marks where a run's own record begins
JUMP_KINDS = (
    "launched",
    "attached",
    "restarted",
    "running",
    "first_step",
    "crash",
    "launch-failed",
    "exited",
    "stopped",
    "error",
    RUN_MARK,
)
LOG_KEEP = 5000  # lines per log kept for the pane, as the live pane keeps


class RecordError(ValueError):
    """No recording there, or a time that cannot be read; the message says which."""


@dataclass(frozen=True)
class Sample:
    snap: Snapshot
    events: tuple[dict[str, Any], ...] = ()  # the timeline events the recorder saw here

    @property
    def time(self) -> float:
        return self.snap.time


@dataclass
class Recording:
    dir: Path
    meta: dict[str, Any]
    samples: list[Sample]
    notes: list[str] = field(default_factory=list)  # torn segments, thinned detail

    @property
    def start(self) -> float:
        return self.samples[0].time

    @property
    def end(self) -> float:
        return self.samples[-1].time

    def host(self) -> HostConfig:
        """The host as recorded: label, topology, run root (no address: nothing is reached)."""
        topo = self.meta.get("topology")
        topo = topo if isinstance(topo, dict) else {}
        try:
            topology = Topology.from_lists(topo.get("target", ()), topo.get("drafter", ()))
        except (ValueError, TypeError):
            topology = Topology()
        return HostConfig(
            name=str(self.meta.get("host") or "local"),
            container=as_str(self.meta.get("container")),
            topology=topology,
            run_root=str(self.meta.get("run_root") or ""),
        )

    def index_at(self, t: float) -> int:
        """The last sample at or before ``t`` (0 when ``t`` is before the first)."""
        times = [s.time for s in self.samples]
        return max(bisect.bisect_right(times, t) - 1, 0)

    def jumps(self) -> list[int]:
        """Indices of the samples that carry an event worth jumping to ([ and ])."""
        return [
            i
            for i, s in enumerate(self.samples)
            if any(e.get("kind") in JUMP_KINDS for e in s.events)
        ]


def find_record_dirs(path: Path) -> list[Path]:
    """The record dirs ``path`` holds: a run dir's ``record/``; a run root's ``.record/`` (its
    samples before any run) and every run's ``record/``; or ``path`` itself."""
    if (path / "record").is_dir():
        return [path / "record"]
    found = [path / ".record"] if (path / ".record").is_dir() else []
    try:
        runs = sorted(p for p in path.iterdir() if (p / "record").is_dir())
    except OSError:
        runs = []
    found += [run / "record" for run in runs]
    if found:
        return found
    if path.is_dir() and any(p.name.startswith("seg-") for p in path.iterdir()):
        return [path]
    raise RecordError(f"no recording in {path} (neither it nor its record/ holds segments)")


def find_record_dir(path: Path) -> Path:
    return find_record_dirs(path)[0]


def _events(rec: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return tuple(e for e in as_list(rec.get("events")) if isinstance(e, dict))


def _sample(dec: Decoder, rec: dict[str, Any]) -> Sample:
    """A sample record read back; raises ValueError (and the like) for one that is not one."""
    if not isinstance(rec.get("snap"), dict):
        raise ValueError(f"its snap is {type(rec.get('snap')).__name__}, not an object")
    return Sample(Snapshot.from_dict(dec.snap(rec), dec.rows), _events(rec))


def _read_dir(where: Path, meta: dict[str, Any], notes: list[str]) -> list[Sample]:
    """The samples of one record dir; every record that cannot be read is a note."""
    samples: list[Sample] = []
    for seg in iter_records(where):
        notes += seg.notes
        dec = Decoder()
        for number, rec in zip(seg.numbers, seg.records, strict=True):
            if rec.get("k") == "meta":
                if not meta:
                    meta.update(rec)
                if (level := rec.get("thin", 1)) != 1:
                    notes.append(f"{seg.path.name}: older detail thinned to 1 sample in {level}")
            elif rec.get("k") == "s":
                try:
                    samples.append(_sample(dec, rec))
                except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                    notes.append(f"{seg.path.name}: record {number} unreadable ({exc}): skipped")
    return samples


def _mark(samples: list[Sample], where: Path) -> None:
    """The first sample of a run's own record carries a mark (a jump target, a timeline
    mark) naming the run, so a whole run root shows where each run begins."""
    first = samples[0]
    run = first.snap.run.id if first.snap.run else where.parent.name
    mark = {"time": first.time, "kind": RUN_MARK, "severity": "info",
            "text": f"run {run}: its record begins"}  # fmt: skip
    samples[0] = Sample(first.snap, (mark, *first.events))


def load(path: Path) -> Recording:
    """Every readable record under ``path`` (a run dir, a record dir, or a run root: every
    run's record); samples in time order, each time once; what was skipped is in ``notes``."""
    dirs = find_record_dirs(path)
    meta: dict[str, Any] = {}
    samples: list[Sample] = []
    notes: list[str] = []
    for where in dirs:
        got = _read_dir(where, meta, notes)
        if got and len(dirs) > 1 and where.name == "record":
            _mark(got, where)
        samples += got
    if not samples:
        raise RecordError(f"the recording in {dirs[0]} holds no sample")
    samples.sort(key=lambda s: s.time)  # stable: two writers' segments interleave by time
    unique = [s for i, s in enumerate(samples) if i == 0 or s.time != samples[i - 1].time]
    return Recording(dirs[0] if len(dirs) == 1 else path, meta, unique, notes[:NOTES_KEPT])


NOTES_KEPT = 50  # a recording's notes said; a damaged one could have thousands


_OFFSET = re.compile(r"^([+-])((?:\d+(?:\.\d+)?[hms]?)+)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")


def parse_time(text: str, rec: Recording) -> float:
    """ISO-8601 (``2026-12-03T07:00:05Z``; no zone: UTC), epoch seconds (``1764745205.5``),
    ``+90s`` / ``+1m30s`` / ``+2h`` from the first sample, ``-10s`` from the last."""
    text = text.strip()
    m = _OFFSET.match(text)
    if m:
        unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}
        secs = sum(float(n) * unit[u] for n, u in _PART.findall(m.group(2)))
        return rec.start + secs if m.group(1) == "+" else rec.end - secs
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise RecordError(
            f"cannot read the time {text!r}: give ISO-8601, epoch seconds, +90s or -10s"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


CHECKPOINT = 32  # samples between two saved states: a step back folds at most this many


def _clone(obj: Any) -> Any:
    """A copy of ``obj`` whose containers are its own (their items are immutable records)."""
    new = copy.copy(obj)
    for name, v in vars(new).items():
        if isinstance(v, deque):
            setattr(new, name, deque(v, maxlen=v.maxlen))
        elif isinstance(v, dict | set | list):
            setattr(new, name, type(v)(v))
    return new


class Cursor:
    """The folded state at one sample of a recording.

    Forward it folds sample by sample; every ``CHECKPOINT`` samples it saves its state, so a
    move back restarts from the nearest saved state at or before the target, not from the
    start (a diagnosis costs milliseconds; a long recording has thousands of samples)."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.saved: dict[int, tuple[Any, ...]] = {}
        self.diag: Diagnosis | None = None
        self.new_events: list[Event] = []  # the events of the last sample folded
        # every log's lines up to here, with its gap notes (True, text), bounded
        self.lines: dict[str, deque[tuple[bool, str]]] = {}
        self._reset()

    def _save(self) -> None:
        lines = {k: deque(v, maxlen=v.maxlen) for k, v in self.lines.items()}
        state = (_clone(self.tracker), _clone(self.timeline), self.diag, list(self.new_events))
        self.saved[self.index] = (*state, lines)

    def _restore(self, target: int) -> None:
        at = max((i for i in self.saved if i <= target), default=None)
        if at is None:
            self._reset()
            return
        tracker, timeline, diag, new, lines = self.saved[at]
        self.tracker, self.timeline = _clone(tracker), _clone(timeline)
        self.diag, self.new_events, self.index = diag, list(new), at
        self.lines = {k: deque(v, maxlen=v.maxlen) for k, v in lines.items()}

    def _reset(self) -> None:
        host = self.rec.host()
        self.tracker = Tracker(host.topology, live=True)
        self.timeline = Timeline()
        self.index = -1
        self.diag, self.new_events, self.lines = None, [], {}

    def seek(self, index: int) -> Diagnosis:
        index = min(max(index, 0), len(self.rec.samples) - 1)
        if index < self.index:
            self._restore(index)
        while self.index < index:
            self.index += 1
            snap = self.rec.samples[self.index].snap
            self.diag = self.tracker.add(snap)
            self.new_events = self.timeline.fold(snap, self.diag)
            for lg in snap.logs:
                self.lines.setdefault(lg.path, deque(maxlen=LOG_KEEP)).extend(_items(lg))
            if self.index % CHECKPOINT == 0 and self.index not in self.saved:
                self._save()
        assert self.diag is not None
        return self.diag

    @property
    def snap(self) -> Snapshot:
        return self.rec.samples[self.index].snap

    def document(self) -> dict[str, Any]:
        assert self.diag is not None
        mtime = next((lg.mtime for lg in self.snap.logs if lg.is_run_log), None)
        return to_json(self.diag, self.rec.host(), self.tracker.progress, mtime)


def _items(lg: LogState) -> list[tuple[bool, str]]:
    """A sample's lines of one log, each gap note (True) before the line it stood before."""
    gaps: dict[int, list[str]] = {}
    for i, text in lg.gaps:
        gaps.setdefault(i, []).append(text)
    out: list[tuple[bool, str]] = []
    for k, line in enumerate(lg.lines):
        out += [(True, g) for g in gaps.pop(k, ())]
        out.append((False, line))
    out += [(True, g) for k in sorted(gaps) for g in gaps[k]]
    return out


def status_at(rec: Recording, t: float) -> dict[str, Any]:
    """``status --json``'s document at time ``t``, plus ``replay`` (where, which sample)."""
    cur = Cursor(rec)
    cur.seek(rec.index_at(t))
    doc = cur.document()
    doc["replay"] = {
        "record": str(rec.dir),
        "at": t,
        "sample": cur.index,
        "samples": len(rec.samples),
        "sample_time": cur.snap.time,
        "notes": list(rec.notes),
    }
    return doc
