"""dflash-tui probe, file part: the run directory's files (log tails are in tail.py).

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of probe.py
(see tui/core/probe/bundle.py); also imported by it when run as a file or a module.
"""

import json
import os
import re

RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")  # as control.sh IDGLOB
SUPERVISOR_FILE = "supervisor.json"  # as tui/core/base/supervision.py RECORD_FILE
EVENTS_TAIL = 65536  # bytes of the event stream read back for its last step
STEPS_CHUNK = 4 << 20  # bytes of the event stream read per sample for the History tab
STEPS_MAX = 1000  # step points sent per sample: a longer backlog is sent thinned


def read_bytes(path: str, limit: int = 1 << 20, page: bool = False) -> bytes:
    """Up to ``limit`` bytes of ``path``. Plain os.open/os.read: the process table reads a
    thousand /proc files a sample, and a buffered file object costs as much as the read.
    ``page``: a /proc file that the kernel writes whole into one page (/proc/PID/stat) comes
    in the first read when it is shorter than that; the read that would find the end is saved."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    chunks = []
    try:
        while limit > 0:  # /proc's seq files may answer in pieces: read on to the end
            chunk = os.read(fd, limit)
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
            if page and len(chunk) < 4096:
                break
    finally:
        os.close(fd)
    return b"".join(chunks)


def expand_home(path: str) -> str:
    """A leading ~, $HOME or ${HOME} (alone or before a /) is the home directory, as in
    control.sh and the shell probe; no other variable is expanded (paths are data)."""
    for head in ("~", "$HOME", "${HOME}"):
        if path == head or path.startswith(head + "/"):
            return os.path.expanduser("~") + path[len(head) :]
    return path  # ~user/... too is a plain name there


def read_run_dir(root, errors: list):
    """The latest run directory under `root` (greatest run-id name) as the contract's dict."""
    if not root:
        return None
    root = expand_home(root)
    try:
        names = sorted(n for n in os.listdir(root) if RUN_ID.match(n))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        errors.append("cannot list run root %s: %s" % (root, exc))
        return None
    names = [n for n in names if os.path.isdir(os.path.join(root, n))]
    if not names:
        return None
    rid = names[-1]
    d = os.path.join(root, rid)
    run = {"id": rid, "dir": d, "log_path": os.path.join(d, "output.log"),
           "events_path": os.path.join(d, "events.jsonl")}  # fmt: skip
    files = RunFiles(d, rid, errors)
    cmd = files.text("command")
    run["command"] = cmd[:-1] if cmd and cmd.endswith("\n") else cmd
    run["pid"], run["pgid"], run["start_ticks"] = files.numbers("pid", (int, int, int))
    run["started_at"] = files.numbers("started_at", (float,))[0]
    # Without a pid file the directory's age tells a launch in progress from one its launcher
    # abandoned (SIGKILLed): rundir.abandoned. Whole seconds, as the shell probe reads them.
    run["born"] = dir_mtime(d) if run["pgid"] is None else None
    run["exit_code"], run["ended_at"] = files.numbers("exit", (int, float))
    err = files.text("launch_error")
    if err is not None:
        err = err.strip() or "launch failed (empty launch_error file)"
    run["launch_error"] = err
    run["kill_requested_at"] = files.numbers("kill_requested", (float,))[0]
    earlier = []
    for n in names[-51:-1]:
        _, pgid, ticks = RunFiles(os.path.join(root, n), n, errors).numbers("pid", (int, int, int))
        if pgid:
            earlier.append([pgid, ticks])
    run["earlier_pgids"] = [pgid for pgid, _ in earlier]
    # With their leaders' start ticks: a PGID number the kernel has since reused is not theirs.
    run["earlier_runs"] = earlier
    return run


def dir_mtime(path: str):
    try:
        return int(os.stat(path).st_mtime)
    except OSError:
        return None


class RunFiles:
    """The small plain files of one run directory; malformed ones read as null plus an error."""

    def __init__(self, d: str, rid: str, errors: list):
        self.d, self.rid, self.errors = d, rid, errors

    def text(self, name: str):
        try:
            return read_bytes(os.path.join(self.d, name), 65536).decode("utf-8", "replace")
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.errors.append("run %s: cannot read %s: %s" % (self.rid, name, exc))
            return None

    def numbers(self, name: str, kinds: tuple) -> list:
        text, vals = self.text(name), [None] * len(kinds)
        toks = (text or "").split()  # empty: the launcher may be writing it right now
        try:
            for i, (kind, tok) in enumerate(zip(kinds, toks)):  # noqa: B905 - extra tokens ignored
                val = kind(tok)
                if val != val or abs(val) == float("inf"):
                    raise ValueError(tok)
                vals[i] = val
        except (ValueError, OverflowError):
            self.errors.append("run %s: malformed %s file: %r" % (self.rid, name, text[:60]))
            return [None] * len(kinds)
        return vals


def read_json_file(path: str, errors: list, what: str, limit: int = 65536):
    """A small JSON object file (None: absent, unreadable or not an object; said in errors)."""
    try:
        data = read_bytes(path, limit)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        errors.append("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
        return None
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        errors.append("%s %s is not JSON" % (what, path))
        return None
    return doc if isinstance(doc, dict) else None


def read_supervisor(root, errors: list):
    """The headless supervisor's record in the run root (written atomically), or None."""
    if not root:
        return None
    return read_json_file(os.path.join(expand_home(root), SUPERVISOR_FILE), errors, "supervisor")


def last_step(run, errors: list):
    """The last `step` event of the run's event stream: time, step, loss, acc, tok/s."""
    path = run.get("events_path") if run else None
    if not path:
        return None
    got = read_events(path, errors, lambda size: max(0, size - EVENTS_TAIL), EVENTS_TAIL)
    if got is None:
        return None
    for raw in reversed(got[1].split(b"\n")):
        if b'"step"' not in raw:
            continue
        try:
            ev = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue  # a cut first line, or a line being written
        if isinstance(ev, dict) and ev.get("event") == "step":
            keys = ("time", "step", "loss", "acc", "tok_s")
            return {k: ev.get(k) for k in keys}
    return None


class StepReader:
    """The step events of the run's event stream, sent incrementally: each sample reads on
    from where the last one stopped (at most STEPS_CHUNK bytes, whole lines only) and sends
    at most STEPS_MAX points [time, step, loss, tok_s]; a longer backlog (attaching to a long
    run) is thinned to about one line in N, and only the kept lines are parsed. Another path, or a
    file that shrank (replaced, truncated), is read again from byte 0."""

    def __init__(self):
        self.path, self.offset = None, 0

    def read(self, run, errors: list):
        path = run.get("events_path") if run else None
        if not path:
            return None
        if path != self.path:
            self.path, self.offset = path, 0
        got = read_events(path, errors, self._start, STEPS_CHUNK)
        if got is None:
            return None
        start, data = got
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) == STEPS_CHUNK:
            end = len(data)  # one line longer than a chunk: skipped, not a step
        self.offset += end
        lines, every = spread(data[:end], STEPS_MAX)
        return {"path": path, "from": start, "thinned": every,
                "points": steps_of(ln for ln in lines if b'"step"' in ln)}  # fmt: skip

    def _start(self, size):
        if size < self.offset:  # replaced or truncated: read again from its start
            self.offset = 0
        return self.offset


def read_events(path, errors: list, where, most: int):
    """(start, up to `most` bytes from byte `where(size)`) of the run's event stream; None
    when it does not exist (yet), or cannot be read (then said in `errors`)."""
    try:
        with open(path, "rb") as f:
            start = where(f.seek(0, os.SEEK_END))
            f.seek(start)
            return start, f.read(most)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        errors.append("cannot read events %s: %s" % (path, exc.strerror or exc))
        return None


def spread(data: bytes, most: int):
    """(lines, N): the whole lines of data, or, when there are more than `most`, `most` of
    them evenly spread (the line at every len/most bytes; about one in N). Positions, not a
    split of every line: catching up on megabytes costs `most` look-ups, not a million."""
    n = data.count(b"\n")
    if n <= most:
        return data.split(b"\n"), 1
    out, last = [], -1
    for j in range(most):
        begin = data.rfind(b"\n", 0, j * len(data) // most) + 1
        if begin != last:
            last = begin
            out.append(data[begin : data.find(b"\n", begin)])
    return out, -(-n // most)


def steps_of(lines) -> list:
    out = []
    for raw in lines:
        try:
            ev = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("event") == "step":
            out.append([ev.get(k) for k in ("time", "step", "loss", "tok_s")])
    return out
