"""dflash-tui probe, process part: the process table from /proc, read in proportion to what moves.

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of main.py
(see tui/core/probe/bundle.py); also imported by it when run as a file or a module.

With a thousand processes, opening every /proc/PID/stat each sample costs more than the rest of
the probe together (~15 us of kernel time each). Most of them sleep: a process that was asleep
(state S or I) and used no CPU since its last reading, outside the run's process groups and
off the GPUs, is re-read only on its turn, once every COLD_EVERY samples; until then its row is
the one last read. New PIDs, and PIDs reused by another process (the /proc directory's inode
changed), are read at once and gone PIDs leave at once (the directory is listed every sample),
so only an idle stranger's own row (its state, CPU and RSS, its command line if it ran exec
meanwhile) may be up to COLD_EVERY - 1 samples old (docs/internals.md, "Probe process table
cache").
"""

import json
import os
import pwd
import time

# >>> parts: bundle.probe_source() drops this block (files.py's code is sent ahead)
try:  # imported as dflash_tui.core.probe.procs
    from dflash_tui.core.probe.files import read_bytes
except ImportError:  # run as a file, beside files.py
    from files import read_bytes  # type: ignore[import-not-found,no-redef]
# <<< parts

CMD_CAP = 8192  # cmdline characters kept per process
PF_KTHREAD = 0x00200000  # /proc/PID/stat flags bit of kernel threads
COLD_EVERY = 5  # an idle process outside the run and the GPUs is re-read every 5th sample
IDLE_STATES = ("S", "I")  # asleep: a zombie, a stopped or a running process is read every sample
_ROW_JSON = json.JSONEncoder(check_circular=False, default=str).encode


def parse_stat(text: str):
    """Fields of /proc/PID/stat, or None. comm may hold ') ', so it ends at the LAST ')'."""
    i, j = text.find("("), text.rfind(")")
    if i < 0 or j < i:
        return None
    f = text[j + 1 :].split()
    try:
        return {
            "pid": int(text[:i]), "comm": text[i + 1 : j], "state": f[0], "ppid": int(f[1]),
            "pgid": int(f[2]), "sid": int(f[3]), "flags": int(f[6]), "start_ticks": int(f[19]),
            "ticks": int(f[11]) + int(f[12]), "rss_pages": int(f[21]),
        }  # fmt: skip
    except (IndexError, ValueError):
        return None


FULL_EVERY = 60  # a change list's probe sends the whole table every 60th line regardless


class RowDelta:
    """The process table as the text of a probe line: the whole table, or (``delta``) only
    the rows whose text changed since the previous line plus every PID in the table's order.

    A row that stood (the same object as last line's) keeps its text: encoding a thousand
    rows costs more than reading them. A row counts as changed when its text differs, so the
    reader (tui/core/base/snapshot_delta.py) rebuilds exactly the rows a whole table would
    carry. Lines are numbered (``seq``); a change list names the line it is relative to, and
    the first line and every FULL_EVERY-th carry the whole table, so a reader that lost its
    base (a refused line) is repaired by the probe without being asked.
    """

    def __init__(self, delta: bool = False):
        self.delta, self.seq, self.full_every = delta, 0, FULL_EVERY
        self.texts = {}  # type: dict[int, tuple[dict, str]]  # pid: (row, its JSON)

    def encode(self, rows: list) -> str:
        """The JSON members (after the head's others) that carry ``rows``."""
        texts, changed, pids, cache, last = [], [], [], {}, self.texts
        for row in rows:
            pid = row["pid"]
            hit = last.get(pid)
            text = hit[1] if hit is not None and hit[0] is row else _ROW_JSON(row)
            cache[pid] = (row, text)  # the row is held, so `is` cannot meet a new object
            texts.append(text)
            if hit is None or hit[1] != text:
                changed.append(text)
            pids.append(str(pid))
        self.texts, self.seq = cache, self.seq + 1
        if not self.delta:
            return '"procs": [' + ",".join(texts) + "]"
        if (self.seq - 1) % self.full_every == 0:  # the first line, and periodically
            return '"seq": %d, "procs": [%s]' % (self.seq, ",".join(texts))
        return '"seq": %d, "procs_delta": {"base": %d, "pids": [%s], "rows": [%s]}' % (
            self.seq, self.seq - 1, ",".join(pids), ",".join(changed),
        )  # fmt: skip


class Seen:
    """What the table knows of one /proc entry since its last reading."""

    __slots__ = ("cold", "fixed", "ino", "key", "pid", "raw", "row", "t", "ticks", "turn")

    def __init__(self, pid: int, raw: bytes):
        self.pid, self.turn, self.raw = pid, pid % COLD_EVERY, raw
        self.ino = 0  # the /proc/PID directory's inode: a reused PID has another one
        self.key = None  # type: tuple | None  # (pid, start ticks, comm) once known for good
        self.fixed = None  # type: tuple | None  # (user, cmd, nspid)
        self.row = None  # type: dict | None  # the row sent; None for a kernel thread
        self.ticks, self.t = 0, 0.0  # CPU ticks at the previous reading, and when
        self.cold = False  # idle at its last reading: read again on its turn only

    def stands(self, ino: int, turn: int, watch) -> bool:
        """Whether the last reading may stand for this sample: idle, not its turn, the same
        /proc directory (not a reused PID), not a GPU's process."""
        return self.cold and self.turn != turn and self.ino == ino and self.pid not in watch


class Procs:
    """The process table from /proc; cpu_pct from the tick delta since the previous reading.

    What a process keeps for its life (user, cmdline, NSpid) is read once per (pid, start
    time, comm) and kept while the process lives: comm is in the key because exec changes it
    (and the cmdline) but not the pid or start time. Each later reading reads only
    /proc/PID/stat. A process whose cmdline is still empty (mid-exec, or a zombie) is not
    cached. Entries of processes gone from /proc are dropped every sample. A stat whose bytes
    are those of the previous reading (an idle process: most of a big table) is not parsed
    again: its row is the previous one. An idle process (``cold``: asleep, no CPU since its
    previous reading, outside ``groups``) and a kernel thread are not even read until their
    turn (module docstring), unless the PID is in ``watch`` (the GPUs' processes) or its
    /proc directory is another one (a reused PID: another inode); a change of ``groups`` (the
    run's and earlier runs' groups) reads every entry once, keeping what it knew.
    """

    def __init__(self, root: str = "/proc"):
        self.root = root
        self.seen = {}  # type: dict[str, Seen]
        self.users = {}  # type: dict[int, str]
        self.groups = set()  # type: set[int]
        self.turn = 0  # samples read so far: whose turn it is among the cold
        self.page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
        self.clk_tck = os.sysconf("SC_CLK_TCK")

    @property
    def cold(self) -> set:
        return {n for n, e in self.seen.items() if e.cold}

    def read(self, errors: list, watch=(), groups=()) -> list:
        now, procs, seen, denied = time.monotonic(), [], {}, []
        turn, self.turn = self.turn % COLD_EVERY, self.turn + 1
        groups, old = set(groups), self.seen
        force, self.groups = groups != self.groups, groups  # new groups: every entry is read
        try:
            entries = [(d.name, d.inode()) for d in os.scandir(self.root) if d.name.isdigit()]
        except OSError as exc:
            errors.append("cannot list %s: %s" % (self.root, exc))
            return []
        for name, ino in entries:
            e = old.get(name)
            if e is not None and not force and e.stands(ino, turn, watch):
                seen[name] = e  # not its turn: the row last read stands (nobody edits it)
                if e.row is not None:
                    procs.append(e.row)
                continue
            try:
                e = self.one(name, e, now)
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited while we read it
            except OSError as exc:
                denied.append("%s (%s)" % (name, exc.strerror or exc))
                continue
            if e is None:
                continue
            e.ino, seen[name] = ino, e
            if e.row is not None:
                procs.append(e.row)
        self.seen = seen  # what is not seen now has gone
        if denied:
            errors.append("unreadable /proc entries: %d, e.g. %s" % (len(denied), denied[0]))
        return procs

    def one(self, name: str, last=None, now=None):
        """The entry of /proc/NAME after reading its stat (and, when new, what it keeps);
        None if unparsable. Raises OSError as the reads do (gone: FileNotFoundError)."""
        now = time.monotonic() if now is None else now
        base = self.root + "/" + name
        raw = read_bytes(base + "/stat", 1 << 20, True)
        if last is not None and last.raw == raw and (last.key is not None or last.row is None):
            return self.again(last, now)  # same bytes: same process, same row, no CPU used
        st = parse_stat(raw.decode("utf-8", "replace"))
        if st is None:
            return None
        e = Seen(st["pid"], raw)
        if st["flags"] & PF_KTHREAD:
            e.cold = True  # a kernel thread: not a job, and hundreds of them; never sent
            return e
        key = (st["pid"], st["start_ticks"], st["comm"])
        fixed = last.fixed if last is not None and last.key == key else None
        if fixed is None:
            fixed = self.fixed(base, st["comm"])
        e.key = key if not fixed[1].startswith("[") else None  # no cmdline yet: ask again
        e.fixed, e.ticks, e.t = fixed, st["ticks"], now
        user, cmd, nspid = fixed
        row = {
            "pid": st["pid"], "ppid": st["ppid"], "pgid": st["pgid"], "sid": st["sid"],
            "state": st["state"], "start_ticks": st["start_ticks"],
            "rss_kb": st["rss_pages"] * self.page_kb, "cpu_pct": None, "user": user,
            "cmd": cmd, "nspid": nspid,
        }  # type: dict  # fmt: skip
        e.row = row
        before = last.row if last is not None else None
        if last is None or before is None or before["start_ticks"] != st["start_ticks"]:
            return e  # new, or another process under a reused PID
        if now <= last.t:
            return e  # no time passed: no CPU figure
        used = st["ticks"] - last.ticks
        row["cpu_pct"] = round(100.0 * used / self.clk_tck / (now - last.t), 1)
        e.cold = used == 0 and e.key is not None and self.idle(row)
        return e

    def again(self, last: Seen, now: float) -> Seen:
        """``last`` read again with the same stat bytes: no CPU used since."""
        row = last.row
        if row is not None and row["cpu_pct"] != 0.0 and now > last.t:
            row = dict(row, cpu_pct=0.0)
            last.row = row
        last.t = now  # the next reading measures its CPU from this one
        last.cold = row is None or self.idle(row)
        return last

    def idle(self, row: dict) -> bool:
        """Asleep and outside the runs' groups: may wait for its turn."""
        groups = self.groups
        return (
            row["state"] in IDLE_STATES and row["pgid"] not in groups and row["sid"] not in groups
        )

    def fixed(self, base: str, comm: str):
        """(user, cmd, nspid): what does not change while the process runs one program."""
        status = read_bytes(base + "/status").decode("utf-8", "replace")
        cmd = read_bytes(base + "/cmdline", CMD_CAP).decode("utf-8", "replace")
        uid = nspid = None
        for line in status.splitlines():
            key, _, val = line.partition(":")
            if key == "Uid" or key == "NSpid":
                vals = [int(x) for x in val.split() if x.isdigit()]
                if key == "Uid" and len(vals) > 1:
                    uid = vals[1]  # effective uid, as ps shows
                elif key == "NSpid":
                    nspid = vals
        cmd = cmd.replace("\0", " ").strip() or "[%s]" % comm
        return self.user(uid), cmd, nspid or []

    def user(self, uid):
        if uid is None:
            return "?"
        if uid not in self.users:
            try:
                self.users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self.users[uid] = str(uid)
        return self.users[uid]
