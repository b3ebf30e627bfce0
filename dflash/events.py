"""The pipeline's two outputs: human log lines on stdout and a JSON-lines event stream.

Stdlib only, so ``dflash_train.train`` can write its first line and the ``started`` event before
torch is imported (a missing log then always means the process never started).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

# Event names the supervisor's timeline knows; others may be added, never renamed.
EVENT_NAMES = (
    "started",
    "model_loaded",
    "compiled",
    "warmed",
    "eval",
    "step",
    "checkpoint",
    "warning",
    "error",
    "done",
    "exit",
    "distributed",  # under torchrun: world size, backend, global batch (rank 0's stream)
    "replica_checksum",  # under torchrun: every rank's weight checksums at a step
    "worker",
)
HEARTBEAT_S = 5.0  # seconds between the `worker` heartbeats ($DFLASH_HEARTBEAT_S overrides)
_current = threading.local()  # the worker record of the thread running it (Heartbeats.join)

_print_lock = threading.Lock()
_prefix = ""  # "[rank N] " on torchrun's ranks other than 0 (set_log_prefix)


def set_log_prefix(prefix: str) -> None:
    """Start every log line with ``prefix`` (each line of a multi-line message)."""
    global _prefix
    _prefix = prefix


def log(line: str, stream: TextIO | None = None) -> None:
    """Print one line and flush at once: the supervisor tails this through a file."""
    out = stream if stream is not None else sys.stdout
    text = line.rstrip("\n")
    if _prefix:
        text = "\n".join(_prefix + part for part in text.split("\n"))
    with _print_lock:  # worker threads log too; keep lines whole
        out.write(text + "\n")
        out.flush()


def format_step(
    step: int,
    loss: float,
    acc: float,
    tok_s: float,
    lr: float,
    tq: int,
    dq: int,
    accept_len: float | None = None,
    drafter_tok_s: Sequence[float] = (),
) -> str:
    """``step=120 loss=2.3100 acc=0.410 tok/s=2810 lr=6.00e-04 tq=2 dq=1 ...`` (regex-friendly).

    The first six fields keep this order and shape (dflash_tui.core.diagnosis.progress parses
    them); extra fields go after ``dq``.
    """
    line = (
        f"step={step} loss={loss:.4f} acc={acc:.3f} tok/s={tok_s:.0f} lr={lr:.2e} tq={tq} dq={dq}"
    )
    if accept_len is not None:
        line += f" al={accept_len:.2f}"
    if drafter_tok_s:
        line += " d_tok/s=" + ",".join(f"{v:.0f}" for v in drafter_tok_s)
    return line


def default_events_path(out_dir: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """Where the event stream goes: $DFLASH_EVENTS, else <out dir>/events.jsonl.

    The out dir defaults to $DFLASH_RUN_DIR (the supervisor's run directory), else ./dflash-out.
    """
    env = os.environ if environ is None else environ
    if env.get("DFLASH_EVENTS"):
        return Path(env["DFLASH_EVENTS"])
    return Path(out_dir or default_out_dir(env)) / "events.jsonl"


def default_out_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("DFLASH_RUN_DIR") or "dflash-out"


class EventLog:
    """Append-only JSON lines, one object per event, flushed per line, safe across threads.

    A stream that cannot be written is reported once on stderr and then ignored: losing the
    timeline must never stop training. ``hold=True`` keeps the events in memory (with their
    own times) until ``release`` names the file: ``dflash_train.train`` opens nothing before the
    arguments are checked, so a usage error creates no file.
    """

    def __init__(self, path: Path | None, hold: bool = False) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fh: TextIO | None = None
        self._broken = False
        self._warn = True
        self._held: list[str] | None = [] if hold else None
        self.counts: dict[str, int] = {}

    def _open(self) -> TextIO | None:
        if self._fh is None and not self._broken and self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            except OSError as exc:
                self._broken = True
                if self._warn:
                    msg = f"dflash-train: warning: cannot write events to {self.path}: {exc}"
                    log(msg, sys.stderr)
        return self._fh

    def _write(self, line: str) -> None:
        fh = self._open()
        if fh is not None:
            try:
                fh.write(line + "\n")
                fh.flush()
            except OSError:
                self._broken = True

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"event": event, "time": round(time.time(), 3), **fields}
        line = json.dumps(record, default=str, separators=(",", ":"))
        with self._lock:
            self.counts[event] = self.counts.get(event, 0) + 1
            if self._held is not None:
                self._held.append(line)
            else:
                self._write(line)
        return record

    def release(self, path: Path | None, warn: bool = True) -> None:
        """Write the held events to ``path`` (None: drop them), and later ones as they come.

        ``warn=False``: a file that cannot be opened is skipped without the warning line.
        """
        with self._lock:
            held, self._held = self._held or [], None
            self.path, self._warn = path, warn
            for line in held:
                self._write(line)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


class Relay(Protocol):
    """Carries other ranks' heartbeat records to rank 0 (dflash_train.dist.StoreRelay)."""

    def publish(self, records: list[dict[str, Any]]) -> None: ...

    def collect(self) -> list[tuple[float, list[dict[str, Any]]]]: ...


class Heartbeats:
    """Each pipeline worker's progress, as ``worker`` events (docs/pipeline.md): role, index,
    GPU, ``rank`` under torchrun, step, queue depth, ``state`` (``work``, or ``wait:queue`` /
    ``wait:barrier`` while it waits on another worker) and ``since`` (when it entered that
    state; working, when it began the step it is on). Worker threads only set their own
    record (no I/O); the pipeline's watch loop emits every record at most once per ``every``
    seconds, so a worker blocked in a wait is still vouched for and one stuck in its own work
    stands out by its ``since``. Under torchrun the ranks other than 0 hand their records to
    ``relay`` and rank 0 writes them."""

    def __init__(self, events: EventLog, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.events = events
        self.every = _number(env.get("DFLASH_HEARTBEAT_S"), HEARTBEAT_S)
        rank = env.get("RANK", "")
        self.rank = int(rank) if rank.isdigit() else None
        self.workers: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._last = 0.0
        # Under torchrun only rank 0's stream is written: the other ranks publish their
        # records through the job's store and rank 0 writes them (dflash_train.dist).
        self.relay: Relay | None = None

    def join(self, role: str, index: int, gpu: int | None) -> None:
        """Called first in a worker's thread: its record, updated by ``beat`` and ``state``."""
        w = {"role": role, "index": index, "gpu": gpu, "step": None, "queue": None,
             "state": "work", "since": round(time.time(), 3)}  # fmt: skip
        if self.rank is not None:
            w["rank"] = self.rank
        with self._lock:
            self.workers.append(w)
        _current.worker = w

    def emit_due(self) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        with self._lock:
            records = [dict(w) for w in self.workers]
        try:
            if self.relay is not None and self.rank:
                self.relay.publish(records)  # this rank's stream is not written
                return
            others = self.relay.collect() if self.relay is not None else []
        except Exception as exc:  # a heartbeat must never stop training
            log(f"dflash-train: warning: heartbeat relay failed, not used any more: {exc}")
            self.relay, others = None, []
        for w in records:
            self.events.emit("worker", **w)
        for at, theirs in others:  # with the time they were published: a silent rank shows
            for w in theirs:
                self.events.emit("worker", **{**w, "time": at})


def _number(text: str | None, default: float) -> float:
    try:
        v = float(text) if text else default
    except ValueError:
        return default
    return v if v > 0 else default


def beat(step: int, queue: int) -> None:
    """A worker's progress: the step (or batch) it is on and its input queue's depth."""
    w = getattr(_current, "worker", None)
    if w is not None:
        if w["state"] == "work" and w["step"] != step:
            # busy on a new step: ``since`` is when it began the step it is on, so a worker
            # that never waits (the pipeline's bottleneck) is not taken for a stalled one
            w["since"] = round(time.time(), 3)
        w["step"], w["queue"] = step, queue


def state(what: str) -> None:
    """The calling worker now works (``work``) or waits (``wait:queue``, ``wait:barrier``)."""
    w = getattr(_current, "worker", None)
    if w is not None and w["state"] != what:
        w["state"], w["since"] = what, round(time.time(), 3)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Parse an event stream, skipping a torn last line (for tests and tools)."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
