#!/usr/bin/env python3
"""dflash-tui probe: one JSON line per sample of GPUs, processes, log tails and the run directory.

Standard library only, python3 >= 3.8 (3.6 and 3.7 work too: no __future__ import, annotations
use builtins only, so keep it that way). The supervisor sends this file over stdin
(`python3 - --once ...`) to wherever the GPUs are. The output is specified in docs/internals.md
and parsed by tui/core/snapshot.py. Every section is guarded: bad tool output, vanishing
processes or unreadable files become entries in `errors`, never a crash or a hang.
"""

import argparse
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

FORMAT = 1
MIB = 1024 * 1024
LOG_CAP = 4 * MIB  # most bytes of one log sent per sample: a flood is skipped, not relayed
PARTIAL_CAP = MIB  # a "line" this long is sent without waiting for its newline
CMD_CAP = 8192  # cmdline characters kept per process
MAX_ERRORS = 50
RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")  # as control.sh IDGLOB
NO_TOOLS = "no NVML and no nvidia-smi on PATH"
PF_KTHREAD = 0x00200000  # /proc/PID/stat flags bit of kernel threads

# (nvidia-smi field, JSON key, kind). `name` goes last: nvidia-smi does not quote it.
GPU_FIELDS = (
    ("index", "index", "int"),
    ("uuid", "uuid", "str"),
    ("pci.bus_id", "bus_id", "str"),
    ("utilization.gpu", "util", "int"),
    ("utilization.memory", "mem_util", "int"),
    ("memory.used", "mem_used_mib", "int"),
    ("memory.total", "mem_total_mib", "int"),
    ("memory.reserved", "mem_reserved_mib", "int"),
    ("temperature.gpu", "temp_c", "int"),
    ("power.draw", "power_w", "float"),
    ("power.limit", "power_limit_w", "float"),
    ("clocks.sm", "sm_clock_mhz", "int"),
    ("clocks.mem", "mem_clock_mhz", "int"),
    ("pstate", "pstate", "str"),
    ("clocks_event_reasons.active", "throttle_reasons", "hex"),
    ("ecc.errors.uncorrected.volatile.total", "ecc_uncorrected", "int"),
    ("name", "name", "str"),
)
FIELD_INFO = {f: (key, kind) for f, key, kind in GPU_FIELDS}
FIELD_INFO["clocks_throttle_reasons.active"] = ("throttle_reasons", "hex")
SAFE_FIELDS = ["index", "uuid", "utilization.gpu", "memory.used", "memory.total", "name"]
OLD_NAMES = {"clocks_event_reasons.active": "clocks_throttle_reasons.active"}  # drivers < 535
APP_FIELDS = ("pid", "used_memory", "gpu_uuid", "process_name")  # process_name last: unquoted
UNITS = (" MiB", " MHz", " %", " W")


def conv(raw: str, kind: str):
    """One CSV value; None for placeholders ([N/A], [Not Supported], N/A, ''). Raises ValueError."""
    v = raw.strip()
    if not v or v.upper() == "N/A" or (v.startswith("[") and v.endswith("]")):
        return None
    if kind == "str":
        return v
    if kind == "hex":
        return int(v, 16) if v[:2].lower() == "0x" else int(v)
    for unit in UNITS:  # tolerate output with units (a --format without nounits)
        if v.endswith(unit):
            v = v[: -len(unit)]
    num = float(v)
    if num != num or num in (float("inf"), float("-inf")):
        raise ValueError("not a finite number: %r" % v)
    if kind == "int":
        return int(v) if v.lstrip("-").isdigit() else int(num)
    return num


def csv_rows(data: bytes, nfields: int, what: str, errors: list) -> list:
    """Split nvidia-smi CSV output into rows of exactly `nfields` values; bad rows -> errors."""
    rows = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.rstrip(b"\r")
        if not raw.strip() or raw.startswith(b"No running processes"):
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            errors.append("%s line %d malformed: not UTF-8" % (what, n))
            continue
        parts = line.split(",", nfields - 1)
        if len(parts) != nfields:
            errors.append(
                "%s line %d malformed: %d fields, expected %d: %r"
                % (what, n, len(parts), nfields, line[:80])
            )
            continue
        rows.append([p.strip() for p in parts])
    return rows


def gpu_rows(data: bytes, fields: list, errors: list) -> list:
    """GPU dicts (every contract key present, null when unknown) from --query-gpu output."""
    out = []
    for row in csv_rows(data, len(fields), "nvidia-smi", errors):
        gpu = dict.fromkeys(key for _, key, _ in GPU_FIELDS)
        for field, raw in zip(fields, row):  # noqa: B905 - equal lengths; strict= needs 3.10
            key, kind = FIELD_INFO[field]
            try:
                gpu[key] = conv(raw, kind)
            except ValueError:
                if key != "index":  # a row without its index is reported just below
                    errors.append("nvidia-smi: unreadable %s %r" % (field, raw[:40]))
        if isinstance(gpu["index"], int) and gpu["index"] >= 0:
            out.append(gpu)
        else:
            errors.append("nvidia-smi line malformed: no GPU index in %r" % ", ".join(row)[:80])
    return out


def app_rows(data: bytes, errors: list) -> list:
    out = []
    for pid, used, uuid, name in csv_rows(data, 4, "nvidia-smi compute-apps", errors):
        pid_n = conv_or_none(pid, "int")
        if pid_n is None:
            errors.append("nvidia-smi compute-apps line malformed: pid %r" % pid[:40])
            continue
        used_n = conv_or_none(used, "int")  # [N/A] under MIG or WDDM
        out.append({"pid": pid_n, "gpu_uuid": conv(uuid, "str"), "used_mib": used_n, "name": name})
    return out


def conv_or_none(raw: str, kind: str):
    try:
        return conv(raw, kind)
    except ValueError:
        return None


class Smi:
    """nvidia-smi from PATH, with a hard timeout; remembers which fields this driver accepts."""

    def __init__(self, path: str, timeout: float):
        self.path, self.timeout = path, timeout
        self.fields = [f for f, _, _ in GPU_FIELDS]
        self.note = None  # why some fields are missing (kept while they are)
        self.drops = 0
        self.stuck = None  # a killed nvidia-smi that has not died yet (driver hang)

    def call(self, args: list):
        """(rc, stdout, stderr), or a str saying why there is no answer."""
        if self.stuck is not None and self.stuck.poll() is None:
            return "nvidia-smi did not answer within %gs (an earlier one is still stuck)" % (
                self.timeout
            )
        try:
            p = subprocess.Popen(
                [self.path, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own group, so a timeout kills anything it started
            )
        except OSError as exc:
            return "cannot run nvidia-smi: %s" % exc
        try:
            out, err = p.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:  # never block on a process stuck in the driver (uninterruptible sleep)
                p.wait(timeout=1)
                p.stdout.close()
                p.stderr.close()
            except subprocess.TimeoutExpired:
                self.stuck = p
            return "nvidia-smi did not answer within %gs" % self.timeout
        return p.returncode, out, err

    def read(self, errors: list):
        """(gpus, procs, error text or None); gpus is None when nothing could be read."""
        while True:  # ends: every retry shrinks the field list or swaps in an older name
            res = self.call(
                ["--query-gpu=" + ",".join(self.fields), "--format=csv,noheader,nounits"]
            )
            if isinstance(res, str):
                return None, [], res
            rc, out, err = res
            if rc == 0:
                break
            text = (out + err).decode("utf-8", "replace")
            m = re.search(r'Field "([^"]*)" is not a valid field', text)
            if not (m and self._drop(m.group(1))):
                return None, [], "nvidia-smi failed (exit %d): %s" % (rc, first_line(text))
        gpus = gpu_rows(out, self.fields, errors)
        res = self.call(
            ["--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"]
        )
        if isinstance(res, str):
            return gpus, [], res
        if res[0] != 0:
            text = (res[1] + res[2]).decode("utf-8", "replace")
            errors.append("nvidia-smi --query-compute-apps failed: " + first_line(text))
        return gpus, app_rows(res[1], errors), self.note

    def _drop(self, bad: str) -> bool:
        """Adapt the field list to a rejected field; False when nothing is left to try."""
        if bad in OLD_NAMES and bad in self.fields:
            self.fields[self.fields.index(bad)] = OLD_NAMES[bad]
            return True
        self.drops += 1
        if bad in self.fields and bad not in SAFE_FIELDS and self.drops <= 2:
            self.fields.remove(bad)
        elif self.fields != SAFE_FIELDS:
            self.fields = list(SAFE_FIELDS)
        else:
            return False
        self.note = "nvidia-smi rejected field %r: using %s" % (bad, ",".join(self.fields))
        return True


def first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:200] if lines else "no output"


class Nvml:
    """NVML through nvidia-ml-py (`import pynvml`); every reading that fails becomes null."""

    def __init__(self):
        import pynvml  # optional: nvidia-ml-py may be absent

        pynvml.nvmlInit()
        self.nv = pynvml

    def q(self, name: str, *args):
        fn = getattr(self.nv, name, None)
        try:
            v = fn(*args) if fn else None
        except Exception:
            return None
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v

    def read(self, errors: list):
        nv, gpus, procs = self.nv, [], []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            g = self.gpu(i, h)
            gpus.append(g)
            for p in self.q("nvmlDeviceGetComputeRunningProcesses", h) or []:
                used = getattr(p, "usedGpuMemory", None)
                name = self.q("nvmlSystemGetProcessName", p.pid) or comm(p.pid) or ""
                procs.append(
                    {"pid": p.pid, "gpu_uuid": g["uuid"], "name": name,
                     "used_mib": mib(used)}
                )  # fmt: skip
        return gpus, procs, None

    def gpu(self, i: int, h) -> dict:
        q, nv = self.q, self.nv
        util = q("nvmlDeviceGetUtilizationRates", h)
        pci = q("nvmlDeviceGetPciInfo", h)
        power = q("nvmlDeviceGetPowerUsage", h)
        limit = q("nvmlDeviceGetPowerManagementLimit", h)
        ps = q("nvmlDeviceGetPerformanceState", h)
        reasons = q("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:
            reasons = q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        bus = getattr(pci, "busId", None)
        used, total, reserved = self.memory(h)
        return {
            "index": i, "uuid": q("nvmlDeviceGetUUID", h), "name": q("nvmlDeviceGetName", h),
            "bus_id": bus.decode() if isinstance(bus, bytes) else bus,
            "util": getattr(util, "gpu", None), "mem_util": getattr(util, "memory", None),
            "mem_used_mib": used, "mem_total_mib": total, "mem_reserved_mib": reserved,
            "temp_c": q("nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0)),
            "power_w": power / 1000.0 if power is not None else None,
            "power_limit_w": limit / 1000.0 if limit is not None else None,
            "sm_clock_mhz": q("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1)),
            "mem_clock_mhz": q("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2)),
            "pstate": "P%d" % ps if isinstance(ps, int) and 0 <= ps < 16 else None,
            "throttle_reasons": reasons,
            "ecc_uncorrected": q("nvmlDeviceGetTotalEccErrors", h, 1, 1),  # uncorrected, volatile
        }  # fmt: skip

    def memory(self, h):
        """MiB (used, total, reserved); used means nvidia-smi's memory.used (reserved excluded).

        Measured on an H200 (driver 580): v2 used == total - free - reserved, v1 used includes
        the reserve, and nvidia-smi rounds bytes up to MiB (615.06 MiB reserved prints 616).
        """
        v2 = getattr(self.nv, "nvmlMemory_v2", None)
        m = self.q("nvmlDeviceGetMemoryInfo", h, v2) if v2 else None
        if m is not None and hasattr(m, "reserved"):
            return mib(m.total - m.free - m.reserved), mib(m.total), mib(m.reserved)
        m = self.q("nvmlDeviceGetMemoryInfo", h)  # v1: used includes the driver's reserve
        if m is None:
            return None, None, None
        return mib(m.used), mib(m.total), None


def mib(n):
    return -(-n // MIB) if isinstance(n, int) else None  # rounded up, as nvidia-smi does


def comm(pid: int):
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return None


def in_thread(fn, timeout: float):
    """Run fn in a daemon thread: (result, exc, finished). A hung driver cannot hang the probe."""
    box = {}

    def target():
        try:
            box["r"] = fn()
        except Exception as exc:
            box["e"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    return box.get("r"), box.get("e"), not t.is_alive()


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


def read_bytes(path: str, limit: int = 1 << 20) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


class Procs:
    """The process table from /proc; cpu_pct from the tick delta since the previous sample."""

    def __init__(self, root: str = "/proc"):
        self.root, self.prev, self.users = root, {}, {}
        self.page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
        self.clk_tck = os.sysconf("SC_CLK_TCK")

    def read(self, errors: list) -> list:
        now, procs, seen, denied = time.monotonic(), [], {}, []
        try:
            names = [n for n in os.listdir(self.root) if n.isdigit()]
        except OSError as exc:
            errors.append("cannot list %s: %s" % (self.root, exc))
            return []
        for name in names:
            try:
                p = self.one(name)
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited while we read it
            except OSError as exc:
                denied.append("%s (%s)" % (name, exc.strerror or exc))
                continue
            if p is None:
                continue
            key, ticks = (p["pid"], p["start_ticks"]), p.pop("ticks")
            last = self.prev.get(key)
            if last is not None and now > last[1]:
                p["cpu_pct"] = round(100.0 * (ticks - last[0]) / self.clk_tck / (now - last[1]), 1)
            seen[key] = (ticks, now)
            procs.append(p)
        self.prev = seen
        if denied:
            errors.append("unreadable /proc entries: %d, e.g. %s" % (len(denied), denied[0]))
        return procs

    def one(self, name: str):
        base = os.path.join(self.root, name)
        st = parse_stat(read_bytes(base + "/stat").decode("utf-8", "replace"))
        if st is None or st["flags"] & PF_KTHREAD:
            return None  # unparsable, or a kernel thread: not a job, and hundreds of them
        status = read_bytes(base + "/status").decode("utf-8", "replace")
        cmd = read_bytes(base + "/cmdline", CMD_CAP).decode("utf-8", "replace")
        uid = nspid = None
        for line in status.splitlines():
            key, _, val = line.partition(":")
            vals = [int(x) for x in val.split() if x.isdigit()]
            if key == "Uid" and len(vals) > 1:
                uid = vals[1]  # effective uid, as ps shows
            elif key == "NSpid":
                nspid = vals
        cmd = cmd.replace("\0", " ").strip() or "[%s]" % st["comm"]
        return {
            "pid": st["pid"], "ppid": st["ppid"], "pgid": st["pgid"], "sid": st["sid"],
            "state": st["state"], "start_ticks": st["start_ticks"],
            "rss_kb": st["rss_pages"] * self.page_kb, "cpu_pct": None, "user": self.user(uid),
            "cmd": cmd, "nspid": nspid or [], "ticks": st["ticks"],
        }  # fmt: skip

    def user(self, uid):
        if uid is None:
            return "?"
        if uid not in self.users:
            try:
                self.users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self.users[uid] = str(uid)
        return self.users[uid]


def boot_time():
    try:
        for line in read_bytes("/proc/stat").decode("ascii", "replace").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class LogTail:
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
        real = os.path.expanduser(self.path)
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


def read_run(root, errors: list):
    """The latest run directory under `root` (greatest run-id name) as the contract's dict."""
    if not root:
        return None
    root = os.path.expanduser(os.path.expandvars(root))
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
        pgid = RunFiles(os.path.join(root, n), n, errors).numbers("pid", (int, int))[1]
        if pgid:
            earlier.append(pgid)
    run["earlier_pgids"] = earlier
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


class Probe:
    """State kept between samples in --interval mode (log offsets, CPU ticks, tool choice)."""

    def __init__(self, args):
        self.args, self.samples = args, 0
        self.procs = Procs()
        self.tails = {}
        self.nvml, self.nvml_busy = None, False  # busy: an NVML call is hung in its thread
        if not args.no_nvml:  # absent module, no driver, a hung driver: use nvidia-smi
            self.nvml = in_thread(Nvml, args.smi_timeout)[0]
        smi = None if self.nvml else shutil.which("nvidia-smi")
        self.smi = Smi(smi, args.smi_timeout) if smi else None

    def sample(self) -> dict:
        errors, out = [], {"format": FORMAT, "time": time.time(), "host": socket.gethostname(),
                           "probe_mode": "python", "clk_tck": self.procs.clk_tck}  # fmt: skip
        out["boot_time"] = guard(boot_time, errors, "boot time")
        tel = guard(lambda: self.gpus(errors), errors, "GPU telemetry")
        out["telemetry"], out["gpus"], out["gpu_procs"] = tel or ({"source": "none"}, [], [])
        out["procs"] = guard(lambda: self.procs.read(errors), errors, "process table") or []
        out["run"] = guard(lambda: read_run(self.args.run_root, errors), errors, "run directory")
        out["logs"] = guard(lambda: self.logs(out["run"]), errors, "logs") or []
        if len(errors) > MAX_ERRORS:
            errors[MAX_ERRORS:] = ["... and %d more errors" % (len(errors) - MAX_ERRORS)]
        out["errors"] = errors
        self.samples += 1
        return out

    def gpus(self, errors: list):
        t0, source = time.monotonic(), "none"
        if self.nvml is not None:
            gpus, procs, error = self.nvml_read(errors)
            source = "nvml"
        elif self.smi is not None:
            gpus, procs, error = self.smi.read(errors)
            source = "nvidia-smi"
        else:
            gpus, procs, error = None, [], NO_TOOLS
        ms = round((time.monotonic() - t0) * 1000.0, 1)
        tel = {"source": source if gpus is not None else "none", "error": error, "elapsed_ms": ms}
        return tel, gpus or [], procs

    def nvml_read(self, errors: list):
        if self.nvml_busy:
            return None, [], "NVML did not answer (an earlier call is still stuck)"
        res, exc, done = in_thread(lambda: self.nvml.read(errors), self.args.smi_timeout)
        if not done:
            self.nvml_busy = True
            return None, [], "NVML did not answer within %gs" % self.args.smi_timeout
        if exc is not None:
            return None, [], "NVML failed: %s: %s" % (type(exc).__name__, exc)
        return res

    def logs(self, run) -> list:
        paths = [(run["log_path"], True)] if run else []
        paths += [(p, False) for p in self.args.log or []]
        out, done = [], set()
        for path, is_run in paths:
            if path in done:
                continue
            done.add(path)
            if path not in self.tails:  # a log first seen after the first sample is all new
                self.tails[path] = LogTail(path, tail_first=self.samples == 0)
            out.append(self.tails[path].sample(self.args.tail_bytes, self.args.max_lines, is_run))
        return out


def guard(fn, errors: list, what: str):
    """A bug in one section must not cost the whole sample."""
    try:
        return fn()
    except Exception as exc:
        errors.append("probe: %s failed: %s: %s" % (what, type(exc).__name__, exc))
        return None


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="probe", allow_abbrev=False)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true")
    mode.add_argument("--interval", type=float, default=None)
    ap.add_argument("--log", action="append", default=[])
    ap.add_argument("--run-root", default=None)
    ap.add_argument("--smi-timeout", type=float, default=5.0)
    ap.add_argument("--no-nvml", action="store_true")
    ap.add_argument("--tail-bytes", type=int, default=65536)
    ap.add_argument("--max-lines", type=int, default=5000)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    probe = Probe(args)
    interval = max(args.interval, 0.05) if args.interval and not args.once else None
    due = time.monotonic()
    try:
        while True:
            sys.stdout.write(json.dumps(probe.sample(), default=str) + "\n")
            sys.stdout.flush()
            if interval is None:
                return 0
            due += interval
            now = time.monotonic()
            if due < now:  # fell behind (a slow sample): restart the schedule, no burst
                due = now
            time.sleep(due - now)
    except (BrokenPipeError, KeyboardInterrupt):
        # The reader went away (its pipe or SSH channel closed): leave quietly.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
