#!/usr/bin/env python3
"""What each NVML query the probe makes costs on this host: CPU (process time, the calling
thread included) and wall time per call, medians over --repeat calls, on GPU 0 and its first
compute process; and the CPU of the same call made alone in a new thread (as a probe that
guards each read with a thread of its own makes it), less an empty thread's start and join.
Which readings are worth caching or reading less often is decided from this (probe/gpu.py,
probe/nvhealth.py).

    python3 bench/nvml_calls.py [--repeat 200]

Needs nvidia-ml-py (``import pynvml``) and a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, str]:
    """(median CPU µs, median wall µs, what the first call gave or raised)."""
    cpu, wall = [], []
    try:
        shown = repr(fn())[:60]
    except Exception as exc:  # "Not Supported" is an answer too: its cost counts
        shown = f"{type(exc).__name__}: {exc}"[:60]
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            fn()
        except Exception:
            pass
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return 1e6 * statistics.median(cpu), 1e6 * statistics.median(wall), shown


def in_new_thread(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU µs of a thread that makes the call once, started and joined."""

    def call() -> None:
        try:
            fn()
        except Exception:
            pass

    cpu = []
    for _ in range(repeat):
        c0 = time.process_time()
        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join()
        cpu.append(time.process_time() - c0)
    return 1e6 * statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    import pynvml as nv

    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
    pid = procs[0].pid if procs else 1
    v2 = getattr(nv, "nvmlMemory_v2", None)
    calls: dict[str, Callable[[], Any]] = {
        "GetCount": nv.nvmlDeviceGetCount,
        "GetHandleByIndex": lambda: nv.nvmlDeviceGetHandleByIndex(0),
        "GetUtilizationRates": lambda: nv.nvmlDeviceGetUtilizationRates(h),
        "GetPciInfo": lambda: nv.nvmlDeviceGetPciInfo(h),
        "GetPowerUsage": lambda: nv.nvmlDeviceGetPowerUsage(h),
        "GetPowerManagementLimit": lambda: nv.nvmlDeviceGetPowerManagementLimit(h),
        "GetPerformanceState": lambda: nv.nvmlDeviceGetPerformanceState(h),
        "GetCurrentClocksEventReasons": lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h),
        "GetUUID": lambda: nv.nvmlDeviceGetUUID(h),
        "GetName": lambda: nv.nvmlDeviceGetName(h),
        "GetTemperature": lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
        "GetClockInfo SM": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        "GetClockInfo MEM": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
        "GetTotalEccErrors": lambda: nv.nvmlDeviceGetTotalEccErrors(h, 1, 1),
        "GetMemoryInfo v2": lambda: nv.nvmlDeviceGetMemoryInfo(h, v2),
        "GetComputeRunningProcesses": lambda: nv.nvmlDeviceGetComputeRunningProcesses(h),
        "SystemGetProcessName": lambda: nv.nvmlSystemGetProcessName(pid),
        "GetRetiredPages": lambda: nv.nvmlDeviceGetRetiredPages(h, 0),
        "GetRetiredPagesPendingStatus": lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h),
        "GetRemappedRows": lambda: nv.nvmlDeviceGetRemappedRows(h),
        "GetPcieReplayCounter": lambda: nv.nvmlDeviceGetPcieReplayCounter(h),
    }
    empty = in_new_thread(lambda: None, args.repeat)
    print(f"an empty thread, started and joined: {empty:.1f} µs of CPU")
    print(f"{'call':32s} {'CPU µs':>8s} {'wall µs':>8s} {'new thread':>10s}  first answer")
    total = fresh = 0.0
    for name, fn in calls.items():
        cpu, wall, shown = timed(fn, args.repeat)
        alone = in_new_thread(fn, args.repeat) - empty
        total, fresh = total + cpu, fresh + alone
        print(f"{name:32s} {cpu:8.1f} {wall:8.1f} {alone:10.1f}  {shown}")
    print(f"{'sum':32s} {total:8.1f} {'':8s} {fresh:10.1f}")
    nv.nvmlShutdown()


if __name__ == "__main__":
    main()
