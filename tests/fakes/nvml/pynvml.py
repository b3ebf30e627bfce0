"""A stand-in for nvidia-ml-py's ``pynvml`` (tests put this folder first on PYTHONPATH).

Without FAKE_NVML_SCENARIO, ``nvmlInit`` fails as on a machine without the NVIDIA driver, so a
probe falls back to the (fake) nvidia-smi. With it, NVML plays the same scenario file as the
fake nvidia-smi, in NVML's units (bytes, milliwatts) and with NVML's memory semantics: v1 ``used``
includes the driver's reserved memory (1626 MiB where nvidia-smi says 1011 MiB + 616 reserved),
v2 has ``reserved`` apart. FAKE_NVML_V1_ONLY=1: a library without the v2 call.
FAKE_NVML_HANG=1: nvmlDeviceGetCount never returns (a wedged driver). FAKE_NVML_RELOAD=1:
nvmlDeviceGetCount reads the scenario again when the file changed (readings that move under a
long-lived probe); without it the scenario is read once, at nvmlInit.

Health: FAKE_NVML_HEALTH names a recorded health reading in the shape bench/device_health.sh
writes (its nvml_raw.json): per GPU, retired pages, remapped rows, the PCIe replay counter, each
a value or ``{"error", "value"}`` (NVML's return code), and ``lost`` (NVML_ERROR_GPU_IS_LOST from
every call); ``xid_events`` the event sets play in order, the file re-read at each wait so a test
can add one while a probe runs. Without it those calls answer Not Supported, as on a GPU that
lacks them. Stdlib only.
"""

import json
import os
import time

MIB = 1024 * 1024
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 1
if not os.environ.get("FAKE_NVML_V1_ONLY"):
    nvmlMemory_v2 = 0x02000028

_gpus: list = []
_apps: list = []


NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_GPU_IS_LOST = 15
_MESSAGES = {3: "Not Supported", 10: "Timeout", 15: "GPU is lost"}


class NVMLError(Exception):
    """As nvidia-ml-py's: ``value`` is NVML's return code, str() its message."""

    def __init__(self, value=None):
        self.value = value if isinstance(value, int) else None
        super().__init__(_MESSAGES.get(value, value) if isinstance(value, int) else value)


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _num(v, kind=int):
    if v is None or v.startswith("[") or v == "N/A":
        raise NVMLError("Not Supported")
    return kind(v.split(" ")[0])


_loaded = [None]  # the scenario file's mtime when last read


def _load(path):
    _loaded[0] = os.stat(path).st_mtime_ns
    with open(path) as f:
        data = json.load(f)
    _gpus[:] = data.get("gpus", [])
    _apps[:] = data.get("apps", [])


def nvmlInit():
    path = os.environ.get("FAKE_NVML_SCENARIO")
    if not path:
        raise NVMLError("NVML Shared Library Not Found")
    _load(path)


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    if os.environ.get("FAKE_NVML_HANG"):
        while True:
            time.sleep(3600)
    path = os.environ.get("FAKE_NVML_SCENARIO")
    if os.environ.get("FAKE_NVML_RELOAD") and path and os.stat(path).st_mtime_ns != _loaded[0]:
        _load(path)  # readings that move while one process reads them (bench/hosts_cost.py)
    return len(_gpus)


def nvmlDeviceGetHandleByIndex(i):
    if _health_gpu(i).get("lost"):
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    return _gpus[i]


def nvmlDeviceGetUUID(h):
    return h["uuid"]


def nvmlDeviceGetName(h):
    return h["name"]


def nvmlDeviceGetPciInfo(h):
    return _Obj(busId=h["pci.bus_id"].encode())  # older nvidia-ml-py returns bytes


def nvmlDeviceGetUtilizationRates(h):
    return _Obj(gpu=_num(h.get("utilization.gpu")), memory=_num(h.get("utilization.memory")))


def _bytes(mib, frac):
    """Bytes that nvidia-smi prints as `mib` (it rounds up), with a real-looking fraction."""
    return 0 if mib == 0 else (mib - 1) * MIB + int(frac * MIB)


def nvmlDeviceGetMemoryInfo(h, version=None):
    # As measured on an H200: 615.0625 MiB reserved (smi: 616), 1010.8125 MiB used (smi: 1011).
    used, total = _bytes(_num(h.get("memory.used")), 0.8125), _num(h.get("memory.total")) * MIB
    reserved = _bytes(_num(h.get("memory.reserved", "0")), 0.0625)
    free = total - used - reserved
    if version:
        return _Obj(version=version, total=total, reserved=reserved, free=free, used=used)
    return _Obj(total=total, free=free, used=used + reserved)


def nvmlDeviceGetTemperature(h, sensor):
    return _num(h.get("temperature.gpu"))


def nvmlDeviceGetPowerUsage(h):
    return int(_num(h.get("power.draw"), float) * 1000)


def nvmlDeviceGetPowerManagementLimit(h):
    return int(_num(h.get("power.limit"), float) * 1000)


def nvmlDeviceGetClockInfo(h, clock):
    return _num(h.get("clocks.current.sm" if clock == NVML_CLOCK_SM else "clocks.current.memory"))


def nvmlDeviceGetPerformanceState(h):
    p = h.get("pstate") or "[N/A]"
    return _num(p[1:] if p.startswith("P") else p)


def nvmlDeviceGetCurrentClocksEventReasons(h):
    return int(h.get("clocks_event_reasons.active", "0x0"), 16)


def nvmlDeviceGetTotalEccErrors(h, error_type, counter_type):
    return _num(h.get("ecc.errors.uncorrected.volatile.total"))


def nvmlDeviceGetComputeRunningProcesses(h):
    out = []
    for a in _apps:
        if a.get("gpu_uuid") == h.get("uuid"):
            used = a.get("used_memory", "[N/A]")
            mem = None if used.startswith("[") else int(used) * MIB
            out.append(_Obj(pid=int(a["pid"]), usedGpuMemory=mem))
    return out


def nvmlSystemGetProcessName(pid):
    for a in _apps:
        if int(a["pid"]) == pid:
            return a.get("process_name", "").encode()
    raise NVMLError("Not Found")


# --- health: retired pages, remapped rows, PCIe replays, Xid events (FAKE_NVML_HEALTH) ---

nvmlEventTypeXidCriticalError = 0x0000000000000008
_sets: list = []  # per event set: {"uuids": set of registered GPUs, "next": events played}


def _health() -> dict:
    """The recorded reading, read afresh each call (a test may rewrite it between samples)."""
    path = os.environ.get("FAKE_NVML_HEALTH")
    if not path:
        return {}
    with open(path) as f:
        return json.load(f)


def _health_gpu(i) -> dict:
    gpus = _health().get("gpus", [])
    return gpus[i] if isinstance(i, int) and i < len(gpus) else {}


def _index(h) -> int:
    return _gpus.index(h)


def _answer(h, key, default_error=NVML_ERROR_NOT_SUPPORTED):
    """A recorded value, or its recorded error raised as NVML raises it."""
    g = _health_gpu(_index(h))
    if g.get("lost"):
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    v = g.get(key, {"value": default_error})
    if isinstance(v, dict) and ("error" in v or "value" in v):
        raise NVMLError(v.get("value") or v.get("error"))
    return v


def nvmlDeviceGetRetiredPages(h, source):
    return list(_answer(h, "retired_pages_sbe" if source == 0 else "retired_pages_dbe"))


def nvmlDeviceGetRetiredPagesPendingStatus(h):
    return int(_answer(h, "retired_pages_pending"))


def nvmlDeviceGetRemappedRows(h):
    return tuple(_answer(h, "remapped_rows"))


def nvmlDeviceGetPcieReplayCounter(h):
    return int(_answer(h, "pcie_replay"))


def nvmlEventSetCreate():
    _sets.append({"uuids": set(), "next": 0})
    return len(_sets) - 1


def nvmlEventSetFree(es):
    _sets[es] = None


def nvmlDeviceRegisterEvents(h, kinds, es):
    if _health_gpu(_index(h)).get("lost"):
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    _sets[es]["uuids"].add(h["uuid"])


def nvmlEventSetWait_v2(es, timeout_ms):
    """The next recorded Xid event of a registered GPU, else NVML's Timeout (at once: a test
    needs no real wait). ``{"gpu": index, "code": xid}``; ``{"fail": code}`` fails the wait."""
    s = _sets[es]
    events = _health().get("xid_events", [])
    while s["next"] < len(events):
        ev = events[s["next"]]
        s["next"] += 1
        if "fail" in ev:
            raise NVMLError(ev["fail"])
        dev = _gpus[ev["gpu"]]
        if dev["uuid"] in s["uuids"]:
            return _Obj(device=dev, eventType=nvmlEventTypeXidCriticalError,
                        eventData=ev["code"], gpuInstanceId=0xFFFFFFFF,
                        computeInstanceId=0xFFFFFFFF)  # fmt: skip
    raise NVMLError(NVML_ERROR_TIMEOUT)
