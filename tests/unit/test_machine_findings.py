"""Host-health findings from recorded readings: /proc/meminfo and /proc/vmstat of the device
machine's H200 (tests/fixtures/h200/nvml_health.json), statvfs numbers, kernel Xid lines and
worker heartbeats, through the probe's parsers, Snapshot and the diagnosis."""

from __future__ import annotations

import json
from pathlib import Path

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.probe.machine import meminfo, parse_kernel_line, statvfs_dict, vmstat_oom

FIX = Path(__file__).resolve().parent.parent / "fixtures"
H200 = json.loads((FIX / "h200" / "nvml_health.json").read_text())
TOPO = Topology((0,), ())


def _run(now: float) -> dict:
    return {"id": "20261203-120000-0001", "dir": "/r/x", "pid": 10, "pgid": 10,
            "start_ticks": 1, "started_at": now - 100}  # fmt: skip


def _snap(now: float, machine: dict, workers=None, procs=None, run=True, gpus=None) -> Snapshot:
    return Snapshot.from_dict({
        "time": now, "run": _run(now) if run else None, "machine": machine,
        "workers": workers or [], "procs": procs or [{"pid": 10, "ppid": 1, "pgid": 10, "sid": 10}],
        "gpus": gpus or [], "telemetry": {"source": "nvml"}})  # fmt: skip


def _codes(snaps) -> dict:
    d = diagnose(snaps, TOPO)
    return {f.code: f for f in d.findings}


def test_recorded_h200_host_is_healthy() -> None:
    m = meminfo(H200["/proc/meminfo"])
    assert m["mem_available_kb"] == 131423632 and m["swap_total_kb"] == 0
    assert vmstat_oom(H200["/proc/vmstat"]) == 0
    st = H200["statvfs_root"]
    disk = {"what": "run_root", "path": "/", "exists": True,
            **statvfs_dict(st[1], st[2], st[4], st[5], st[7])}  # fmt: skip
    codes = _codes([_snap(1000.0, {**m, "oom_kill": 0, "disks": [disk]})])
    assert not {"host-memory-low", "disk-low", "oom-killed"} & set(codes)


def test_host_memory_low_from_meminfo() -> None:
    text = H200["/proc/meminfo"].replace("MemAvailable:   131423632", "MemAvailable:     2000000")
    f = _codes([_snap(1000.0, meminfo(text))])["host-memory-low"]
    assert "1.5 %" in f.message and f.severity == "warning"


def test_oom_killed_names_the_process_from_counter_and_vanished_pid() -> None:
    vm0 = H200["/proc/vmstat"]
    vm1 = vm0.replace("oom_kill 0", "oom_kill 1")
    run_procs = [{"pid": 10, "ppid": 1, "pgid": 10, "sid": 10, "cmd": "sh run.sh"},
                 {"pid": 11, "ppid": 10, "pgid": 10, "sid": 10,
                  "cmd": "python -m dflash_train.train"}]  # fmt: skip
    a = _snap(1000.0, {"oom_kill": vmstat_oom(vm0)}, procs=run_procs)
    b = _snap(1002.0, {"oom_kill": vmstat_oom(vm1)}, procs=run_procs[:1])
    f = _codes([a, b])["oom-killed"]
    assert "pid 11 (python -m dflash_train.train)" in f.message and "0 -> 1" in f.message
    assert "oom-killed" not in _codes([a, _snap(1002.0, {"oom_kill": 0}, procs=run_procs[:1])])


def test_oom_killed_from_kernel_line() -> None:
    line = parse_kernel_line("Out of memory: Killed process 11 (python3) total-vm:1kB", 999.0)
    assert line == {"time": 999.0, "pid": 11, "name": "python3", "text": line["text"]}
    kl = {"source": "kmsg", "xids": [], "ooms": [line]}
    f = _codes([_snap(1000.0, {"kernel_log": kl})])["oom-killed"]
    assert "pid 11 (python3)" in f.message


def test_disk_low_rate_and_next_checkpoint() -> None:
    def m(free: int) -> dict:
        return {"disks": [{"what": "run_root", "path": "/mnt/r", "exists": True,
                           **statvfs_dict(4096, 1024, free // 4096, 100, 90)}],
                "checkpoint": {"path": "/mnt/r/x/checkpoints/step_00000002.pt", "step": 2,
                               "mtime": 990.0, "size_bytes": 1 << 20}}  # fmt: skip

    f = _codes([_snap(1000.0, m(3 << 20)), _snap(1010.0, m(2 << 20))])["disk-low"]
    assert "/mnt/r" in f.message and "2 MiB free of 4 MiB" in f.message
    assert "shrinking" in f.message and "fits" in f.message and f.severity == "warning"
    f = _codes([_snap(1000.0, m(900 << 10))])["disk-low"]
    assert "does NOT fit" in f.message and f.severity == "error"


def test_readings_over_the_window_run_from_the_first_sample_that_says_to_the_last() -> None:
    """The disk's shrinking rate and the OOM-kill counter's rise are read between the first
    and the last sample that carry them: samples in between, or at either end, without the
    reading (no machine key, one with no readings, another disk, no counter) are passed over,
    not read as zero."""

    def disk(free_mib: int, what: str = "run_root") -> dict:
        return {"what": what, "path": "/mnt/r", "exists": True,
                **statvfs_dict(4096, 1 << 20, (free_mib << 20) // 4096, 100, 90)}  # fmt: skip

    procs = [{"pid": 10, "ppid": 1, "pgid": 10, "sid": 10, "cmd": "sh run.sh"},
             {"pid": 11, "ppid": 10, "pgid": 10, "sid": 10, "cmd": "python train.py"}]  # fmt: skip
    window = [
        _snap(980.0, None, procs=procs),  # no machine key
        _snap(990.0, {}, procs=procs),  # a machine key with no reading
        _snap(1000.0, {"disks": [disk(400)], "oom_kill": 3}, procs=procs),
        _snap(1005.0, {"disks": [disk(10, "out_dir")]}, procs=procs),  # another disk only
        _snap(1007.0, {"oom_kill": 5}, procs=procs[:1]),
        _snap(1010.0, {"disks": [disk(300)]}, procs=procs[:1]),  # no counter
    ]
    codes = _codes(window)
    # 100 MiB in 10 s (1000 -> 1010): from the first sample that says, not the window's first.
    assert "shrinking 10 MiB/s: full in about" in codes["disk-low"].message, codes
    assert "3 -> 5" in codes["oom-killed"].message and "pid 11" in codes["oom-killed"].message
    # One counter reading: no rise; free space that grew: no rate.
    one = _codes([window[1], window[2], window[3], _snap(1010.0, {"disks": [disk(3000)]})])
    assert "oom-killed" not in one and "disk-low" not in one, one


def test_nvml_xids_are_counted_over_every_sample_of_the_window() -> None:
    def nv(*codes: int) -> dict:
        return {"nvml": {"gpus": [{"index": 0, "xids": [{"code": c, "time": 1.0} for c in codes]},
                                  {"index": 1}]}}  # fmt: skip

    window = [_snap(1000.0, nv(13)), _snap(1001.0, {}), _snap(1002.0, nv(13, 31))]
    by = {f.message.split("Xid ")[1].split(" ")[0]: f for f in diagnose(window, TOPO).findings
          if f.code == "gpu-xid"}  # fmt: skip
    assert set(by) == {"13", "31"} and "NVML, 2x" in by["13"].message
    assert by["13"].gpus == (0,) and "NVML, 1x" in by["31"].message


def test_gpu_xid_and_lost_from_kernel_and_nvml() -> None:
    x = parse_kernel_line("NVRM: Xid (PCI:0000:18:00): 48, pid=11, name=python3, DBE", 999.0)
    lost = parse_kernel_line("NVRM: Xid (PCI:0000:2a:00): 79, GPU has fallen off the bus.", 999.0)
    gpus = [{"index": 0, "uuid": "GPU-a", "bus_id": "00000000:18:00.0"},
            {"index": 1, "uuid": "GPU-b", "bus_id": "00000000:2A:00.0"}]  # fmt: skip
    kl = {"source": "kmsg", "xids": [x, lost], "ooms": []}
    nv = {"gpus": [{"index": 0, "uuid": "GPU-a", "xids": [{"code": 13, "time": 999.5}],
                    "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False,
                                      "failure": False}, "pcie_replay": 1}]}  # fmt: skip
    codes = _codes([_snap(1000.0, {"kernel_log": kl, "nvml": nv}, gpus=gpus)])
    assert codes["gpu-lost"].gpus == (1,) and "Xid 79" in codes["gpu-lost"].message
    xids = [f for f in diagnose([_snap(1000.0, {"kernel_log": kl, "nvml": nv}, gpus=gpus)],
                                TOPO).findings if f.code == "gpu-xid"]  # fmt: skip
    by = {f.message.split("Xid ")[1].split(" ")[0]: f for f in xids}
    assert (
        by["48"].gpus == (0,) and by["48"].severity == "error" and "double-bit" in by["48"].message
    )
    assert by["13"].severity == "warning" and "NVML" in by["13"].message


def test_gpu_lost_from_nvml_error() -> None:
    nv = {"gpus": [{"index": 0, "lost": True, "error": "NVMLError_GpuIsLost: GPU is lost"}]}
    f = _codes([_snap(1000.0, {"nvml": nv})])["gpu-lost"]
    assert f.gpus == (0,) and "GpuIsLost" in f.message


def test_worker_stalled_names_the_one_busy_while_others_wait() -> None:
    now = 2000.0
    ws = [{"role": "drafter", "index": i, "gpu": 5 + i, "step": 3, "queue": 4, "time": now - 1,
           "state": "work" if i == 1 else "wait:barrier", "since": now - 90}
          for i in range(3)]  # fmt: skip
    f = _codes([_snap(now, {}, workers=ws)])["worker-stalled"]
    assert f.gpus == (6,) and "drafter 1 (GPU 6)" in f.message and "2 of the 2" in f.message
    ws[1]["since"] = now - 10
    assert "worker-stalled" not in _codes([_snap(now, {}, workers=ws)])


def test_checkpoint_stale() -> None:
    from dflash_tui.core.diagnosis.progress import Progress
    from dflash_tui.core.diagnosis.thresholds import Thresholds

    snap = _snap(1000.0, {"checkpoint": {"path": "/o/checkpoints/step_00000002.pt", "step": 2,
                                          "mtime": 900.0, "size_bytes": 10}})  # fmt: skip
    prog = Progress(last_step=9, last_step_at=999.0)
    d = diagnose([snap], TOPO, Thresholds(checkpoint_stale_s=50.0), prog)
    assert "checkpoint-stale" in {f.code for f in d.findings}
    d = diagnose([snap], TOPO, Thresholds(checkpoint_stale_s=500.0), prog)
    assert "checkpoint-stale" not in {f.code for f in d.findings}


def test_threshold_keys_match_the_dataclass() -> None:
    """config_keys' [thresholds] names are the Thresholds fields: one truth, held by this test."""
    from dataclasses import fields

    from dflash_tui.core.base.config_keys import THRESHOLD_KEYS
    from dflash_tui.core.diagnosis.thresholds import Thresholds

    assert tuple(f.name for f in fields(Thresholds)) == THRESHOLD_KEYS


def test_status_document_carries_machine() -> None:
    from dflash_tui.core.base.config_types import HostConfig
    from dflash_tui.core.diagnosis.document import to_json

    m = {**meminfo(H200["/proc/meminfo"]), "oom_kill": vmstat_oom(H200["/proc/vmstat"])}
    doc = to_json(diagnose([_snap(1000.0, m)], TOPO), HostConfig())
    assert doc["machine"]["mem_available_kb"] == 131423632 and doc["machine"]["oom_kill"] == 0
    json.dumps(doc)
