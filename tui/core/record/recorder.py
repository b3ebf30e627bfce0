"""The flight recorder's writer: appends each sample, with its diagnosis and timeline events,
to the record of the run it belongs to.

Where: ``<run_dir>/record/`` for a run on this machine (no ``address``, no container), and
``<run_root>/.record/`` for samples taken before any run. A run on another machine (or inside
a container, whose paths are not ours) is recorded here, under
``~/.local/state/dflash-tui/records/<host>/<run-id>/`` (``$DFLASH_RECORD_DIR`` overrides).

Segments rotate every ``segment_s`` seconds of samples (or an eighth of the cap); after each
rotation the run's record is held under ``max_mib`` by thinning its oldest segments (thin.py).
A write that fails (a full disk, a read-only run root) is logged once and recording of that
run stops: recording never stops supervision.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from dflash_tui import __version__
from dflash_tui.core.base.config import expand_local
from dflash_tui.core.base.config_record import RecordSettings
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.local_proc import alive, start_ticks
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.timeline import Event, Timeline
from dflash_tui.core.diagnosis.views import Diagnosis
from dflash_tui.core.record.codec import FORMAT, Encoder, dumps
from dflash_tui.core.record.segments import (
    SegmentWriter,
    segment_files,
    segment_name,
    thin_level,
)
from dflash_tui.core.record.thin import thin_segment

DIR_ENV = "DFLASH_RECORD_DIR"
THIN_FACTOR = 4
MAX_THIN = 256  # past 1 sample in 256, a segment is left as it is


def record_dir(host: HostConfig, snap: Snapshot, env: Mapping[str, str] | None = None) -> Path:
    """Where the samples of ``snap``'s run are recorded (see the module's docstring)."""
    env = os.environ if env is None else env  # read, not copied: this runs every sample
    run_id = snap.run.id if snap.run else "no-run"
    if host.address is None and host.container is None and DIR_ENV not in env:
        if snap.run is None:  # hidden, like .lock: the run root's folders are its runs
            return expand_local(host.run_root) / ".record"
        return Path(snap.run.dir) / "record"
    base = env.get(DIR_ENV) or os.path.join(
        env.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "dflash-tui", "records"
    )
    return Path(base) / host.label.replace("/", "_") / run_id


WRITER = ".writer"  # "PID START_TICKS" of the one process recording into a record dir


def _me() -> list[str]:
    return [str(os.getpid()), str(start_ticks(os.getpid()))]


def claim(where: Path) -> bool:
    """Make this process the record dir's one writer, unless a live process (same PID and
    start time, on this machine: recorders write locally) already is."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / WRITER
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                owner = path.read_text().split()
            except OSError:
                owner = []
            if owner == _me():
                return True
            whole = len(owner) == 2 and owner[0].isdigit() and owner[1].isdigit()
            if whole and alive(int(owner[0]), int(owner[1])):
                return False
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a writer that is gone: take its place
            continue
        with os.fdopen(fd, "w") as f:
            f.write(" ".join(_me()) + "\n")
        return True
    return False


class Recorder:
    """``add`` one sample at a time; ``close`` at the end (a crash loses no whole record)."""

    def __init__(
        self,
        host: HostConfig,
        settings: RecordSettings,
        writer: str,
        log: logging.Logger | None = None,
    ) -> None:
        self.host, self.settings, self.writer = host, settings, writer
        self.log = log or logging.getLogger("dflash_tui.record")
        self.dir: Path | None = None
        self.seg: SegmentWriter | None = None
        self.seg_start = 0.0
        self.enc = Encoder()
        self.timeline = Timeline()
        self.failed: set[Path] = set()  # record dirs that could not be written
        self.others: set[Path] = set()  # record dirs another live writer holds
        self.claimed: Path | None = None  # the record dir whose .writer file is ours
        self.samples = 0  # samples recorded
        self._where: tuple[tuple[object, ...], Path] | None = None  # record_dir's last answer

    def where(self, snap: Snapshot) -> Path:
        """``record_dir`` of this sample, kept while what it is made of stays (the run, the
        variables it reads): paths joined per sample of every host add up."""
        run, env = snap.run, os.environ
        if run is None:  # samples before any run: a local run root may name any variable
            return record_dir(self.host, snap)
        key = (self.host, run.id, run.dir, env.get(DIR_ENV), env.get("XDG_STATE_HOME"),
               env.get("HOME"))  # fmt: skip
        kept = self._where
        if kept is None or kept[0] != key:
            kept = self._where = (key, record_dir(self.host, snap))
        return kept[1]

    def add(
        self, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event] | None = None
    ) -> None:
        """Record one sample. ``events``: the caller's timeline events of it (else our own)."""
        if not self.settings.enabled:
            return
        if events is None:
            events = self.timeline.fold(snap, diag) if diag is not None else []
        where = self.where(snap)
        if where in self.failed or where in self.others:
            return
        try:
            self._write(where, snap, diag, events)
        except OSError as exc:
            self.failed.add(where)
            self.log.warning("recording to %s stopped: %s", where, exc.strerror or exc)
            self._drop()

    def _write(
        self, where: Path, snap: Snapshot, diag: Diagnosis | None, events: Sequence[Event]
    ) -> None:
        if where != self.dir:
            self.close()
            self.release()
            if not claim(where):
                # Two writers would each record the lines new to them: every line twice.
                self.others.add(where)
                self.log.warning("not recording to %s: another live writer holds it", where)
                return
            self.dir = self.claimed = where
        if self.seg is not None and self._due(snap.time):
            self.close()
        if self.seg is None:
            self._open(where, snap)
        assert self.seg is not None
        self.seg.write(dumps(self.enc.sample(snap, diag, tuple(events))))
        self.samples += 1

    def _due(self, t: float) -> bool:
        assert self.seg is not None
        too_big = self.seg.size >= max(self.settings.max_bytes // 8, 1 << 20)
        return t - self.seg_start >= self.settings.segment_s or too_big

    def _open(self, where: Path, snap: Snapshot) -> None:
        where.mkdir(parents=True, exist_ok=True)
        self.seg = SegmentWriter(where / segment_name(snap.time, os.getpid()))
        self.seg_start, self.enc = snap.time, Encoder()
        meta = {
            "k": "meta",
            "format": FORMAT,
            "host": self.host.label,
            "address": self.host.address,
            "container": self.host.container,
            "topology": self.host.topology.to_json(),
            "run_root": self.host.run_root,
            "run_id": snap.run.id if snap.run else None,
            "writer": self.writer,
            "pid": os.getpid(),
            "version": __version__,
            "thin": 1,
        }
        self.seg.write(dumps(meta))

    def close(self) -> None:
        """End the open segment (a whole gzip file), then hold the run under its cap."""
        seg, self.seg = self.seg, None
        if seg is None:
            return
        try:
            seg.close()
            enforce_cap(seg.path.parent, self.settings.max_bytes, self.log)
        except OSError as exc:
            self.log.warning("recording to %s: %s", seg.path.parent, exc.strerror or exc)

    def release(self) -> None:
        """Give up the record dir we hold (its .writer file), e.g. at the end."""
        where, self.claimed = self.claimed, None
        if where is not None:
            with contextlib.suppress(OSError):
                if (where / WRITER).read_text().split() == _me():
                    (where / WRITER).unlink()

    def _drop(self) -> None:
        seg, self.seg, self.dir = self.seg, None, None
        if seg is not None:
            try:
                seg.file.close()
            except OSError:
                pass


def enforce_cap(where: Path, cap: int, log: logging.Logger) -> None:
    """Thin the oldest least-thinned segments until the record is under ``cap`` bytes."""
    while True:
        files = segment_files(where)
        sizes = {p: p.stat().st_size for p in files}
        if sum(sizes.values()) <= cap or len(files) < 2:
            return
        closed = files[:-1]  # the newest may be another writer's open segment
        pick = min(closed, key=lambda p: (thin_level(p), files.index(p)))
        if thin_level(pick) >= MAX_THIN:
            log.warning("record %s is over its cap with every segment thinned", where)
            return
        before = sizes[pick]
        new, after = thin_segment(pick, THIN_FACTOR)
        log.info("record %s: thinned %s (%d -> %d bytes)", where, new.name, before, after)
