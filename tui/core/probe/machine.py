"""dflash-tui probe, machine part: host memory, swap, the OOM-kill count, free space of the run's
paths, the newest checkpoint, the kernel log's NVRM Xid and OOM lines, and each worker's latest
heartbeat from the run's event stream (docs/internals.md, "machine" and "workers").

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of main.py
(see tui/core/probe/bundle.py); also imported by it when run as a file or a module. Every
reading that cannot be made is null, with the reason where one is known: never a guess.
"""

import getpass
import json
import os
import re
import shlex
import tempfile

KMSG_MAX = 2000  # kernel log records read per sample (the first sample reads the backlog)
KERNEL_KEEP = 20  # Xid / OOM lines kept (the latest)
WORKERS_TAIL = 262144  # bytes of the event stream read back for the workers' heartbeats
CKPT_NAME = re.compile(r"^step_(\d+)\.pt$")  # as dflash/checkpoint.py writes them
XID_LINE = re.compile(
    r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)(?:, pid=(\d+))?(?:, name=([^,]*))?"
)
OOM_LINE = re.compile(
    r"Out of memory: Killed process (\d+) \(([^)]*)\)|oom-kill:.*task=([^,]*),pid=(\d+)"
)


def meminfo(text):
    """kB values of /proc/meminfo that matter: MemTotal, MemAvailable, SwapTotal, SwapFree."""
    want = {"MemTotal": "mem_total_kb", "MemAvailable": "mem_available_kb",
            "SwapTotal": "swap_total_kb", "SwapFree": "swap_free_kb"}  # fmt: skip
    out = dict.fromkeys(want.values())
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key in want and val.split() and val.split()[0].isdigit():
            out[want[key]] = int(val.split()[0])
    return out


def vmstat_oom(text):
    """/proc/vmstat's oom_kill: processes the kernel's OOM killer has killed since boot."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "oom_kill" and parts[1].isdigit():
            return int(parts[1])
    return None


def disk(what, path):
    """Free space and inodes of the filesystem holding `path` (its nearest existing parent)."""
    d = {"what": what, "path": path, "exists": os.path.exists(path)}
    probe = path
    while probe and not os.path.exists(probe):
        up = os.path.dirname(probe)
        probe = up if up != probe else ""
    try:
        st = os.statvfs(probe or "/")
    except OSError as exc:
        d["error"] = exc.strerror or str(exc)
        return d
    d.update(statvfs_dict(st.f_frsize, st.f_blocks, st.f_bavail, st.f_files, st.f_favail))
    return d


def statvfs_dict(frsize, blocks, bavail, files, favail):
    return {"total_bytes": frsize * blocks, "free_bytes": frsize * bavail,
            "total_inodes": files or None, "free_inodes": favail if files else None}  # fmt: skip


def run_env(run_dir):
    """The run's environment as the launcher wrote it (`export K='v'` lines of its env file)."""
    env = {}  # type: dict[str, str]
    try:
        with open(os.path.join(run_dir, "env"), "rb") as f:
            text = f.read(65536).decode("utf-8", "replace")
    except OSError:
        return env
    for line in text.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            k, _, v = words[1].partition("=")
            env[k] = v
    return env


def out_dir_of(run):
    """The run's out-dir: `--out-dir DIR` of its command (relative to its workdir), else the
    run directory itself (the pipeline's default is $DFLASH_RUN_DIR)."""
    d = run["dir"]
    try:
        words = shlex.split(run.get("command") or "")
    except ValueError:
        words = []
    found = None
    for i, w in enumerate(words):
        if w == "--out-dir" and i + 1 < len(words):
            found = words[i + 1]
        elif w.startswith("--out-dir="):
            found = w[len("--out-dir=") :]
    if not found:
        return d
    if found.startswith("~"):
        found = os.path.expanduser(found)
    if not os.path.isabs(found):
        try:
            with open(os.path.join(d, "workdir"), "rb") as f:
                base = f.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            base = d
        found = os.path.join(base or d, found)
    return found


def compile_cache(env):
    """TORCHINDUCTOR_CACHE_DIR of the run, else torch's default /tmp/torchinductor_<user>."""
    if env.get("TORCHINDUCTOR_CACHE_DIR"):
        return env["TORCHINDUCTOR_CACHE_DIR"]
    user = env.get("USER")
    if not user:
        try:
            user = getpass.getuser()
        except Exception:
            user = "unknown"
    return os.path.join(
        tempfile.gettempdir(), "torchinductor_" + re.sub(r"[\\/:*?\"<>|]", "_", user)
    )


def newest_checkpoint(out_dir):
    """The newest `checkpoints/step_N.pt` under the out-dir: path, step, mtime, size."""
    folder = os.path.join(out_dir, "checkpoints")
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    best = None
    for n in names:
        m = CKPT_NAME.match(n)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), n)
    if best is None:
        return None
    path = os.path.join(folder, best[1])
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"path": path, "step": best[0], "mtime": st.st_mtime, "size_bytes": st.st_size}


class KernelLog:
    """NVRM Xid and OOM-kill lines of the kernel log, read from /dev/kmsg (kept open, read
    on from where it stopped). Unreadable (a container, dmesg_restrict): `error` says why."""

    def __init__(self, path="/dev/kmsg"):
        self.path, self.fd, self.error = path, None, None
        self.boot = None  # type: float | None  # epoch of the monotonic clock's zero
        self.xids, self.ooms = [], []  # type: list, list
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            self.error = "%s: %s" % (path, exc.strerror or exc)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            self.error = "closed"

    def read(self, boot_time):
        if self.fd is None:
            return {"source": None, "error": "kernel log not readable (%s)" % self.error,
                    "xids": [], "ooms": []}  # fmt: skip
        for _ in range(KMSG_MAX):
            try:
                rec = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:  # EPIPE: records overwritten while away; go on
                if exc.errno == 32:
                    continue
                self.error = "%s: %s" % (self.path, exc.strerror or exc)
                break
            if not rec:
                break
            self.record(rec.decode("utf-8", "replace"), boot_time)
        return {"source": "kmsg", "error": None, "xids": self.xids[-KERNEL_KEEP:],
                "ooms": self.ooms[-KERNEL_KEEP:]}  # fmt: skip

    def record(self, rec, boot_time):
        head, _, msg = rec.partition(";")
        msg = msg.split("\n", 1)[0]
        if "NVRM: Xid" not in msg and "Killed process" not in msg and "oom-kill" not in msg:
            return
        try:
            usec = int(head.split(",")[2])
        except (IndexError, ValueError):
            usec = None
        t = boot_time + usec / 1e6 if boot_time is not None and usec is not None else None
        line = parse_kernel_line(msg, t)
        if line is not None:
            (self.xids if "code" in line else self.ooms).append(line)
            del self.xids[:-KERNEL_KEEP], self.ooms[:-KERNEL_KEEP]


def parse_kernel_line(msg, t):
    """An NVRM Xid line -> {time, pci, code, pid, name, text}; an OOM kill -> {time, pid, name,
    text}; anything else None."""
    m = XID_LINE.search(msg)
    if m:
        return {"time": t, "pci": m.group(1), "code": int(m.group(2)),
                "pid": int(m.group(3)) if m.group(3) else None,
                "name": m.group(4), "text": msg[:300]}  # fmt: skip
    m = OOM_LINE.search(msg)
    if m:
        pid = m.group(1) or m.group(4)
        return {"time": t, "pid": int(pid), "name": m.group(2) or m.group(3), "text": msg[:300]}
    return None


def read_text(path):
    with open(path, "rb") as f:
        return f.read(1 << 20).decode("ascii", "replace")


def read_machine(run, root, kernel, boot_time, errors):
    """The `machine` section: memory, swap, OOM kills, disks, checkpoint, kernel log lines."""
    out = {}
    try:
        out.update(meminfo(read_text("/proc/meminfo")))
    except OSError as exc:
        errors.append("cannot read /proc/meminfo: %s" % (exc.strerror or exc))
    try:
        out["oom_kill"] = vmstat_oom(read_text("/proc/vmstat"))
    except OSError as exc:
        out["oom_kill"] = None
        errors.append("cannot read /proc/vmstat: %s" % (exc.strerror or exc))
    disks = [disk("run_root", root)] if root else []
    out["checkpoint"] = None
    if run:
        env = run_env(run["dir"])
        out_dir = out_dir_of(run)
        disks.append(disk("out_dir", out_dir))
        disks.append(disk("compile_cache", compile_cache(env)))
        out["checkpoint"] = newest_checkpoint(out_dir)
    out["disks"] = disks
    out["kernel_log"] = kernel.read(boot_time) if kernel is not None else None
    return out


def last_workers(run, errors):
    """Each worker's latest `worker` event (its heartbeat) in the tail of the event stream."""
    path = run.get("events_path") if run else None
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - WORKERS_TAIL))
            data = f.read(WORKERS_TAIL)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        errors.append("cannot read events %s: %s" % (path, exc.strerror or exc))
        return None
    latest = {}
    for raw in data.split(b"\n"):
        if b'"worker"' not in raw:
            continue
        try:
            ev = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue  # a cut first line, or a line being written
        if isinstance(ev, dict) and ev.get("event") == "worker":
            latest[(ev.get("rank"), ev.get("role"), ev.get("index"))] = ev
    keys = ("role", "index", "gpu", "rank", "step", "queue", "state", "since", "time")
    return [{k: ev.get(k) for k in keys} for ev in latest.values()]
