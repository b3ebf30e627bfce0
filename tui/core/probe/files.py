"""dflash-tui probe, file part: log tails (appended bytes only) and the run directory's files.

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of probe.py
(see tui/core/probe/bundle.py); also imported by it when run as a file or a module.
"""

import json
import os
import re
import stat

MIB = 1024 * 1024
LOG_CAP = 4 * MIB  # most bytes of one log sent per sample: a flood is skipped, not relayed
PARTIAL_CAP = MIB  # a "line" this long is sent without waiting for its newline
RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")  # as control.sh IDGLOB
SUPERVISOR_FILE = "supervisor.json"  # as tui/core/base/supervision.py RECORD_FILE
EVENTS_TAIL = 65536  # bytes of the event stream read back for its last step


def read_bytes(path: str, limit: int = 1 << 20) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


class TailReader:
    """Appended text of one file between samples; survives truncation, rotation and absence."""

    def __init__(self, path: str, tail_first: bool):
        self.path = path
        self.offset = None if tail_first else 0  # None: the first read sends only the tail
        self.ident = None  # (dev, inode) of the file last read
        self.partial = b""  # a last line still waiting for its newline

    def sample(self, tail_bytes: int, max_lines: int, is_run_log: bool = False) -> dict:
        out = {"path": self.path, "exists": False, "size": None, "mtime": None, "lines": [],
               "truncated": False, "skipped_bytes": 0, "error": None,
               "is_run_log": is_run_log}  # fmt: skip
        real = expand_home(self.path)
        try:
            st = os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            if self.offset is None:
                self.offset = 0  # absent now: whatever appears later is all new
            if self.ident is not None:
                self.ident = "gone"  # a file that comes back is a new file: truncated
            return out
        except OSError as exc:
            out["error"] = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
            return out
        out.update(exists=True, size=st.st_size, mtime=st.st_mtime)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block us
        except OSError as exc:
            out["error"] = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
            return out
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                out["error"] = "not a regular file"
                return out
            out.update(size=st.st_size, mtime=st.st_mtime)
            lines, skipped, out["truncated"] = self.read(fd, st, tail_bytes)
        except OSError as exc:
            out["error"] = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
            return out
        finally:
            os.close(fd)
        drop = len(lines) - max(max_lines, 0)
        if drop > 0:  # keep the newest lines
            skipped += sum(len(x) + 1 for x in lines[:drop])
            lines = lines[drop:]
        out["skipped_bytes"] = skipped
        out["lines"] = [decode_line(x) for x in lines]
        return out

    def read(self, fd: int, st, tail_bytes: int):
        """(complete lines as bytes, skipped byte count, truncated flag); advances the offset."""
        size, ident, lines = st.st_size, (st.st_dev, st.st_ino), []
        truncated = self.ident is not None and (ident != self.ident or size < (self.offset or 0))
        if truncated:
            if self.partial:
                lines.append(self.partial)  # the old file's unfinished last line
            self.offset, self.partial = 0, b""
        self.ident = ident
        start, cut, skipped = self.offset, False, 0
        if start is None:  # first sample: the last tail_bytes, from a line start
            start = max(0, size - tail_bytes)
            cut = start > 0
        flood = size - start > LOG_CAP
        if flood:  # skip to the last LOG_CAP bytes and count what was not sent
            skipped = size - LOG_CAP - start + len(self.partial)
            start, cut, self.partial = size - LOG_CAP, True, b""
        frm = start - 1 if cut else start  # one byte before: was `start` a line start?
        data = read_range(fd, frm, size - frm)
        self.offset = frm + len(data)
        if cut:  # drop the unfinished line we started in
            nl = data.find(b"\n")
            if flood:
                skipped += nl if nl >= 0 else max(len(data) - 1, 0)
            data = data[nl + 1 :] if nl >= 0 else b""
        parts = (self.partial + data).split(b"\n")
        self.partial = parts.pop()
        if len(self.partial) > PARTIAL_CAP:
            parts.append(self.partial)
            self.partial = b""
        return lines + parts, skipped, truncated


def read_range(fd: int, start: int, n: int) -> bytes:
    if n <= 0:
        return b""
    os.lseek(fd, start, os.SEEK_SET)
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, MIB))
        if not b:
            break  # the file shrank meanwhile: the next sample sees the truncation
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def decode_line(b: bytes) -> str:
    return (b[:-1] if b.endswith(b"\r") else b).decode("utf-8", "replace")


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
                vals[i] = kind(tok)
                if vals[i] != vals[i] or abs(vals[i]) == float("inf"):
                    raise ValueError(tok)
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
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - EVENTS_TAIL))
            data = f.read(EVENTS_TAIL)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        errors.append("cannot read events %s: %s" % (path, exc.strerror or exc))
        return None
    for raw in reversed(data.split(b"\n")):
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
