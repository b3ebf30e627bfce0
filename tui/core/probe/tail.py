"""dflash-tui probe, tail part: the lines appended to one log file between samples.

Standard library only, python3 >= 3.8 (no __future__ import: the parts are joined into one
program). Sent over stdin ahead of main.py (tui/core/probe/bundle.py); imported by it when run
as a file or a module.

Every line the file gets is sent once, or a gap entry of the sample says what was not
(``gaps``: ``[index, text]``, placed before ``lines[index]``; docs/internals.md):

- the file is followed by its open descriptor: after a rotation (mv, then a new file at the
  path) the rest of the old file is read before the new one is started;
- truncation is told by size < offset, and by a fingerprint of the file's first bytes and of
  the bytes just before the offset (a truncate then fast regrowth leaves the size larger);
- the run's own log is followed through the job's stdout (``/proc/PID/fd/1``) when the path
  no longer names the file the job writes (moved, replaced, deleted);
- a line longer than LINE_CAP is cut (its head is sent, the rest counted), never dropped whole;
- a new probe resumes where the previous one stopped (``--resume PATH=TOKEN``, the token being
  the last sample's ``resume``), so a reconnect neither repeats nor loses lines.
"""

import collections
import os
import stat
import zlib

MIB = 1024 * 1024
LOG_CAP = 4 * MIB  # most bytes of lines sent per sample: older lines beyond it become a gap
READ_CAP = 64 * MIB  # most bytes read per sample: a bigger flood is skipped unread (a gap)
LINE_CAP = 16384  # a longer line is cut: its first LINE_CAP bytes are sent, the rest counted
FP_BYTES = 64  # bytes of the file's head, and before the offset, that fingerprint it
CHUNK = MIB
SCAN_MAX = 10000  # directory entries looked at for a rotated file's new name
CUTS = (None, "line", "flood", "tail")  # what a cut skips to its newline (a token's CUT)

# The notes a tail puts in its gaps (before the line at their index).
TRUNCATED = (
    "the file was truncated or rewritten: following it from its start (lines written just "
    "before that may be missing)"
)
ROTATED = (
    "the file was rotated or replaced: the old one was read to its end; following the new one "
    "from its start"
)
REPLACED = "the file was replaced: following the new one from its start"
AWAY_ROTATED = (
    "the file was rotated while the probe was away (the old one is now %s): read it to its "
    "end; following the new file from its start"
)
AWAY_TRUNCATED = (
    "the file was truncated while the probe was away: following it from its start; lines "
    "written before the truncation may be missing"
)
AWAY_REPLACED = (
    "the file was replaced while the probe was away: what the old one got after byte %s is "
    "not shown; following the new one from its start"
)


def read_range(fd: int, start: int, n: int) -> bytes:
    if n <= 0:
        return b""
    os.lseek(fd, start, os.SEEK_SET)
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, CHUNK))
        if not b:
            break  # the file shrank meanwhile: the next sample sees the truncation
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def decode_line(b: bytes) -> str:
    return (b[:-1] if b.endswith(b"\r") else b).decode("utf-8", "replace")


def fingerprint(fd: int, upto: int) -> int:
    """crc32 of the file's first bytes and of the bytes before ``upto`` (both <= FP_BYTES)."""
    head = read_range(fd, 0, min(FP_BYTES, upto))
    return zlib.crc32(head + b"|" + read_range(fd, max(0, upto - FP_BYTES), min(FP_BYTES, upto)))


def parse_token(token):
    """``OFFSET:DEV:INO:CUT:FP`` -> a tuple of 5 ints, or None when malformed."""
    try:
        parts = token.split(":")
        off, dev, ino, cut, fp = (int(x, 16 if i == 4 else 10) for i, x in enumerate(parts))
    except (AttributeError, ValueError):
        return None
    return (off, dev, ino, cut, fp) if off >= 0 and 0 <= cut < len(CUTS) else None


def job_stdout(leader):
    """(proc path, stat, where it points) of a live run leader's stdout when it is a regular
    file, else None. ``leader`` is (pid, start_ticks): a reused PID is not the leader."""
    pid, ticks = leader
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        if int(text[text.rfind(")") + 1 :].split()[19]) != ticks:
            return None
        link = "/proc/%d/fd/1" % pid
        st = os.stat(link)
        return (link, st, os.readlink(link)) if stat.S_ISREG(st.st_mode) else None
    except (OSError, ValueError, IndexError):
        return None  # gone, not ours to read, or no such fd


def ident(st) -> tuple:
    return (st.st_dev, st.st_ino)


def plural(n: int, word: str) -> str:
    return "%s %s%s" % (format(n, ","), word, "" if n == 1 else "s")


class Batch:
    """One sample's lines and gap notes, capped at LOG_CAP bytes and ``max_lines`` lines: the
    oldest lines go first, and how many is a gap note of its own."""

    def __init__(self, max_lines: int):
        self.lines = collections.deque()  # type: collections.deque[tuple[int, bytes]]
        self.notes = []  # type: list[tuple[int, str]]  # (number of the next line, text)
        self.seq = self.size = self.skipped = 0
        self.max_lines = max(max_lines, 0)

    def line(self, b: bytes) -> None:
        self.lines.append((self.seq, b))
        self.seq += 1
        self.size += len(b) + 1
        while self.lines and (len(self.lines) > self.max_lines or self.size > LOG_CAP):
            old = self.lines.popleft()[1]
            self.size -= len(old) + 1
            self.skipped += len(old) + 1

    def note(self, text: str) -> None:
        self.notes.append((self.seq, text))

    def result(self):
        """(lines as bytes, gaps as [index, text])."""
        first = self.lines[0][0] if self.lines else self.seq
        gaps = []
        if first:
            gaps.append([0, "%s not shown: more than one sample carries (%s, %d MiB); the file "
                            "has them" % (plural(first, "line"), plural(self.max_lines, "line"),
                                          LOG_CAP // MIB)])  # fmt: skip
        gaps += [[max(seq - first, 0), text] for seq, text in self.notes]
        return [b for _, b in self.lines], gaps


class TailReader:
    """Appended text of one file between samples; survives truncation, rotation, absence, a
    moved run log and a restart of the probe (``resume``)."""

    def __init__(self, path: str, tail_first: bool, resume=None, real=None):
        self.path, self.real = path, real or path
        self.tail_first = tail_first  # the first read sends only the last tail_bytes
        self.resume = parse_token(resume)  # where the previous probe stopped
        self.fd = None  # type: int | None  # the file followed, held open between samples
        self.ident = None  # type: tuple[int, int] | None  # its (dev, inode)
        self.seen = False  # a file was followed before: one that appears now is a new file
        self.offset = 0  # bytes of the held file read (the partial line included)
        self.partial = b""  # a last line still waiting for its newline
        self.cut = None  # type: str | None  # "line" | "flood" | "tail": skip to a newline
        self.cut_bytes = 0
        self.fp = None  # type: int | None  # fingerprint(fd, resume point) after the last read
        self.truncated = False
        self.rotated = None  # type: str | None  # the note for the next file, after a rotation

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def held(self) -> int:
        """The descriptor of the file followed (callers know there is one)."""
        assert self.fd is not None
        return self.fd

    def point(self) -> int:
        """The resume point: bytes consumed through the last line sent (or being cut)."""
        return self.offset - len(self.partial)

    def sample(self, tail_bytes: int, max_lines: int, is_run_log: bool = False, leader=None):
        out = {"path": self.path, "exists": False, "size": None, "mtime": None, "lines": [],
               "truncated": False, "skipped_bytes": 0, "error": None,
               "is_run_log": is_run_log, "gaps": [], "resume": None,
               "followed": None}  # fmt: skip
        batch, self.truncated = Batch(max_lines), False
        try:
            self.step(out, batch, tail_bytes, leader)
        except OSError as exc:
            out["error"] = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
        lines, out["gaps"] = batch.result()
        out["lines"] = [decode_line(x) for x in lines]
        out["skipped_bytes"], out["truncated"] = batch.skipped, self.truncated
        if self.fd is not None and self.fp is not None and self.ident is not None:
            dev, ino = self.ident
            cut = CUTS.index(self.cut)
            out["resume"] = "%d:%d:%d:%d:%x" % (self.point(), dev, ino, cut, self.fp)
        return out

    def step(self, out: dict, batch: Batch, tail_bytes: int, leader) -> None:
        try:
            st = os.stat(self.real)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except OSError as exc:  # the path cannot be looked at; a held file still can
            st, out["error"] = None, "%s: %s" % (type(exc).__name__, exc.strerror or exc)
        target = self.real
        job = job_stdout(leader) if leader else None
        # The job still writes the file this tail followed (held now, or by the probe before
        # this one), which the path no longer names (moved, replaced): keep following it. Any
        # other stdout of the leader is not known to be this log.
        known = (self.ident, self.resume[1:3] if self.resume else None)
        if (
            job is not None
            and ident(job[1]) in known
            and (st is None or ident(st) != ident(job[1]))
        ):
            target, st, out["followed"] = job
        present = st is not None
        if st is not None:
            out.update(exists=True, size=st.st_size, mtime=st.st_mtime)
        if self.fd is not None and (not present or ident(st) != self.ident):
            self.leave(batch, present)  # rotated, replaced or removed
        if self.fd is None:
            if not present:
                self.tail_first = False  # absent now: whatever appears later is all new
                return
            self.open(target, out, batch, tail_bytes)
            if self.fd is None:
                return
        st = os.fstat(self.held())
        if present:  # else a moved file still held: its lines, but the path is missing
            out.update(size=st.st_size, mtime=st.st_mtime)
        if st.st_size < self.offset or fingerprint(self.held(), self.point()) != self.fp:
            self.restart(batch, TRUNCATED)
        self.read(st.st_size, batch)

    def open(self, target: str, out: dict, batch: Batch, tail_bytes: int) -> None:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block us
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            out["error"] = "not a regular file"
            return
        self.fd, self.ident, self.offset, self.partial, self.cut = fd, ident(st), 0, b"", None
        token, self.resume = self.resume, None
        if token is not None:
            self.resumed(token, st, batch)
        elif self.seen:
            self.truncated = True
            batch.note(self.rotated or REPLACED)
        elif self.tail_first and st.st_size > tail_bytes:
            # From the byte before the tail: a newline there means the tail starts a line.
            self.offset = st.st_size - tail_bytes - 1
            self.cut, self.cut_bytes = "tail", 0
        self.seen, self.tail_first, self.rotated = True, False, None
        self.fp = fingerprint(fd, self.point())

    def resumed(self, token: tuple, st, batch: Batch) -> None:
        """Continue where the previous probe stopped, or say why that file is not there."""
        off, dev, ino, cut, fp = token
        if ident(st) == (dev, ino) and st.st_size >= off and fingerprint(self.held(), off) == fp:
            self.offset, self.cut, self.cut_bytes = off, CUTS[cut], 0
            return
        self.truncated = True
        old = self.find(dev, ino) if ident(st) != (dev, ino) else None
        if old is not None:  # rotated by a rename while no probe ran: read the rest first
            new = (self.fd, self.ident)
            self.fd, self.ident, self.offset, self.cut = old[0], (dev, ino), off, CUTS[cut]
            self.read(os.fstat(old[0]).st_size, batch)
            self.flush_partial(batch)
            os.close(old[0])
            self.fd, self.ident, self.offset, self.cut = new[0], new[1], 0, None
            batch.note(AWAY_ROTATED % old[1])
        elif ident(st) == (dev, ino):
            batch.note(AWAY_TRUNCATED)
        else:
            batch.note(AWAY_REPLACED % format(off, ","))

    def find(self, dev: int, ino: int):
        """(fd, path) of the file (dev, ino) under another name in the same directory."""
        d = os.path.dirname(self.real) or "."
        try:
            names = os.listdir(d)[:SCAN_MAX]
        except OSError:
            return None
        for name in names:
            p = os.path.join(d, name)
            try:
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and ident(st) == (dev, ino):
                    return os.open(p, os.O_RDONLY | os.O_NONBLOCK), p
            except OSError:
                continue
        return None

    def leave(self, batch: Batch, replaced: bool) -> None:
        """The path no longer names the held file: read it to its end first. A new file at the
        path is followed next; with none, a file still linked somewhere (moved) stays held."""
        st = os.fstat(self.held())
        self.read(st.st_size, batch)
        if replaced or st.st_nlink == 0:
            self.flush_partial(batch)
            self.close()
            if replaced:  # open() says it, once
                self.rotated = ROTATED

    def restart(self, batch: Batch, why: str) -> None:
        self.flush_partial(batch)  # the old content's unfinished last line
        self.offset, self.cut, self.truncated = 0, None, True
        batch.note(why)

    def flush_partial(self, batch: Batch) -> None:
        if self.partial:
            batch.line(self.partial)
            self.partial = b""
        self.end_cut(batch)

    def end_cut(self, batch: Batch) -> None:
        kind, n, self.cut, self.cut_bytes = self.cut, self.cut_bytes, None, 0
        if kind == "line" and n:
            batch.skipped += n
            batch.note("a line was cut after %s bytes: %s more of it not shown"
                       % (format(LINE_CAP, ","), format(n, ",")))  # fmt: skip
        elif kind == "flood" and n:
            batch.skipped += n
            batch.note("%s skipped unread: more than %d MiB arrived since the last sample; the "
                       "file has them" % (plural(n, "byte"), READ_CAP // MIB))  # fmt: skip

    def read(self, size: int, batch: Batch) -> None:
        """Read the held file from the offset to ``size`` into ``batch``."""
        if size - self.offset > READ_CAP:  # a flood: skip the oldest unread, to a line start
            skip = size - READ_CAP - self.offset
            if self.cut != "flood":
                self.end_cut(batch)
                self.cut, self.cut_bytes = "flood", len(self.partial)
            self.cut_bytes += skip
            self.offset, self.partial = size - READ_CAP, b""
        fd = self.held()
        if size > self.offset:
            os.lseek(fd, self.offset, os.SEEK_SET)
        while self.offset < size:
            data = os.read(fd, min(CHUNK, size - self.offset))
            if not data:
                break  # the file shrank meanwhile: the next sample sees the truncation
            self.offset += len(data)
            self.split(data, batch)
        self.fp = fingerprint(fd, self.point())

    def split(self, data: bytes, batch: Batch) -> None:
        pos, n = 0, len(data)
        while pos < n:
            nl = data.find(b"\n", pos)
            stop = n if nl < 0 else nl
            piece = data[pos:stop]
            pos = stop + 1
            if self.cut is not None:
                if self.cut != "tail":
                    self.cut_bytes += len(piece) + (nl >= 0)
                if nl >= 0:
                    if self.cut != "tail":
                        self.cut_bytes -= 1  # the newline ends the line: not part of it
                    self.end_cut(batch)
                continue
            room = LINE_CAP - len(self.partial)
            if len(piece) < room or (nl >= 0 and len(piece) == room):
                if nl >= 0:
                    batch.line(self.partial + piece)
                    self.partial = b""
                else:
                    self.partial += piece
                continue
            batch.line(self.partial + piece[:room])  # a giant line: its head now, cut the rest
            self.partial, self.cut, self.cut_bytes = b"", "line", len(piece) - room
            if nl >= 0:
                self.end_cut(batch)
