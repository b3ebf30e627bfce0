"""What a restart says while it waits for the killed run's GPUs to be released."""

from __future__ import annotations

from typing import Any

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.control.restart import holders_text
from dflash_tui.core.diagnosis.thresholds import DEFAULT


def _snap(live_pids: list[int], gpu_procs: list[dict[str, Any]]) -> Snapshot:
    procs = [
        {"pid": p, "ppid": 1, "pgid": p, "sid": p, "state": "S", "start_ticks": 9, "cmd": "x"}
        for p in [1, *live_pids]
    ]
    gpus = [
        {"index": i, "uuid": f"GPU-{i}", "name": "H200", "mem_used_mib": m, "util": 97}
        for i, m in enumerate([70000, 70000, 5000])
    ]
    return Snapshot.from_dict(
        {"time": 1.0, "host": "box", "telemetry": {"source": "nvidia-smi"}, "gpus": gpus,
         "gpu_procs": gpu_procs, "procs": procs, "logs": [], "run": None}
    )  # fmt: skip


def test_each_gpu_is_named_once_and_a_gone_holder_is_said_to_be_gone() -> None:
    gp = [
        {"pid": 4242, "gpu_uuid": "GPU-0", "used_mib": 70000, "name": "python3"},
        {"pid": 4343, "gpu_uuid": "GPU-1", "used_mib": 70000, "name": "python3"},
    ]
    text = holders_text(_snap([4343], gp), {4242, 4343}, {"GPU-0", "GPU-1", "GPU-2"}, DEFAULT)
    assert text == [
        "GPU 0: pid 4242 python3 holds 68.4 GiB (process gone; the driver has not released it yet)",
        "GPU 1: pid 4343 python3 holds 68.4 GiB",
        "GPU 2 holds 4.9 GiB",  # no process of the run listed, memory still up
    ]


def test_a_holder_seen_through_a_container_is_looked_up_by_its_own_pid() -> None:
    # Inside a container the table holds container PIDs; the driver reports the host's.
    gp = [{"pid": 4242, "container_pid": 42, "gpu_uuid": "GPU-0", "used_mib": 70000,
           "name": "python3"}]  # fmt: skip
    text = holders_text(_snap([42], gp), {42}, {"GPU-0"}, DEFAULT)
    assert text == ["GPU 0: pid 4242 python3 holds 68.4 GiB"]  # alive, not "gone"
