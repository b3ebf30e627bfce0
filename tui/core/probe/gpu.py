"""dflash-tui probe, GPU part: NVML (nvidia-ml-py) when it answers, else nvidia-smi from PATH.

Standard library only, python3 >= 3.6 (no __future__ import). Sent over stdin ahead of probe.py
(see tui/core/probe/bundle.py); also imported by it when run as a file or a module.

Two NVML readings cost far more than the rest and rarely change: the power limit (set by an
admin) and the PCIe replay counter (a count of link errors since boot). On the device
machine's H200 each takes ~0.13 ms of CPU, ~0.3 ms in a fresh thread, where every other query
takes a few µs (bench/nvml_calls.py): together most of NVML's cost per sample. ``SlowReads``
reads them once per SLOW_EVERY_S and carries the last answer between.
"""

import os
import re
import signal
import subprocess
import time

MIB = 1024 * 1024
SLOW_EVERY_S = 10.0  # how old a slow NVML reading (power limit, PCIe replays) may be
NO_TOOLS = "no NVML and no nvidia-smi on PATH"

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
        self.note = None  # type: str | None  # why some fields are missing (kept while they are)
        self.drops = 0
        self.stuck = None  # type: subprocess.Popen[bytes] | None  # killed, not dead yet (driver hang)

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
                for pipe in (p.stdout, p.stderr):  # both PIPE: never None
                    if pipe is not None:
                        pipe.close()
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
                return None, [], "nvidia-smi failed (exit %d): %s" % (rc, why_line(text))
        gpus = gpu_rows(out, self.fields, errors)
        res = self.call(
            ["--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"]
        )
        if isinstance(res, str):
            return gpus, [], res
        if res[0] != 0:
            text = (res[1] + res[2]).decode("utf-8", "replace")
            errors.append("nvidia-smi --query-compute-apps failed: " + why_line(text))
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


# A traceback's own lines (its frames are indented) never say why; shell.sh's why_line too.
_FRAME = re.compile(
    r"Traceback \(most recent call last\):|During handling of the above exception"
    r"|The above exception was the direct cause"
)
_WHY = re.compile(
    r"error|fail|not found|unable|cannot|can.t|couldn.t|denied|no such|mismatch|timed out",
    re.IGNORECASE,
)


def why_line(text: str) -> str:
    """The line of a failing tool's output that says why: the last non-empty line that is
    not part of a traceback's frames, preferring the last one that names a failure
    (``Failed to initialize NVML: ...`` over the ``NVML library version`` under it)."""
    why = last = anything = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        anything = line.strip()
        if line[:1].isspace() or _FRAME.match(line):
            continue
        last = line
        if _WHY.search(line):
            why = line
    return (why or last or anything or "no output")[:200]


class SlowReads:
    """Readings made at most once per ``every`` seconds each (by key); the last answer, a
    failure's None too, is carried between."""

    def __init__(self, every=SLOW_EVERY_S):
        self.every, self.kept = every, {}

    def get(self, key, read):
        now = time.monotonic()
        kept = self.kept.get(key)
        if kept is not None and now - kept[0] < self.every:
            return kept[1]
        value = read()
        self.kept[key] = (now, value)
        return value


class Nvml:
    """NVML through nvidia-ml-py (`import pynvml`); every reading that fails becomes null."""

    def __init__(self):
        import pynvml  # optional: nvidia-ml-py may be absent

        pynvml.nvmlInit()
        self.nv = pynvml
        self.slow = SlowReads()

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
            try:  # one GPU fallen off the bus must not blank the others: it shows as missing
                h = nv.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                errors.append("NVML: GPU %d unreadable: %s" % (i, exc))
                continue
            g = self.gpu(i, h)
            gpus.append(g)
            for p in self.q("nvmlDeviceGetComputeRunningProcesses", h) or []:
                used = getattr(p, "usedGpuMemory", None)
                name = self.q("nvmlSystemGetProcessName", p.pid) or comm(p.pid) or ""
                procs.append(
                    {"pid": p.pid, "gpu_uuid": g["uuid"], "name": name,
                     "used_mib": bytes_to_mib(used)}
                )  # fmt: skip
        return gpus, procs, None

    def gpu(self, i: int, h) -> dict:
        q, nv = self.q, self.nv
        util = q("nvmlDeviceGetUtilizationRates", h)
        pci = q("nvmlDeviceGetPciInfo", h)
        power = q("nvmlDeviceGetPowerUsage", h)
        limit = self.slow.get(i, lambda: q("nvmlDeviceGetPowerManagementLimit", h))
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
            return (
                bytes_to_mib(m.total - m.free - m.reserved),
                bytes_to_mib(m.total),
                bytes_to_mib(m.reserved),
            )
        m = self.q("nvmlDeviceGetMemoryInfo", h)  # v1: used includes the driver's reserve
        if m is None:
            return None, None, None
        return bytes_to_mib(m.used), bytes_to_mib(m.total), None


def bytes_to_mib(n):
    return -(-n // MIB) if isinstance(n, int) else None  # rounded up, as nvidia-smi does


def comm(pid: int):
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return None
