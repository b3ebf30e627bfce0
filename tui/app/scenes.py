"""Fixed scenes as hand-built Snapshots: the seed incident and a healthy run.

Used by the snapshot tests and the docs: every time, PID and value is fixed, so a screen
rendered from a scene is the same on every machine (feed them through ScriptedSource).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dflash_tui.core.base.snapshot import GpuProcess, Proc, Snapshot

T0 = 1_764_669_600.0  # 2025-12-02 10:00:00 UTC
SEED_LOG = "/workspace/train_stdout_flex6.log"
H200_MIB = 143771


def _gpu(i: int, util: int, used: int, **kw: Any) -> dict[str, Any]:
    return {
        "index": i,
        "uuid": f"GPU-{i:08d}",
        "name": "NVIDIA H200",
        "util": util,
        "mem_used_mib": used,
        "mem_total_mib": H200_MIB,
        "temp_c": kw.pop("temp", 37 if util == 0 else 58),
        "power_w": kw.pop("power", 127.3 if util == 0 else 612.0),
        **kw,
    }


def _proc(pid: int, ppid: int, pgid: int, cmd: str, **kw: Any) -> dict[str, Any]:
    return {
        "pid": pid,
        "ppid": ppid,
        "pgid": pgid,
        "sid": kw.pop("sid", pgid),
        "state": kw.pop("state", "S"),
        "start_ticks": kw.pop("start", 1000 + pid),
        "user": kw.pop("user", "root"),
        "cmd": cmd,
        **kw,
    }


_BASE_PROCS = [
    _proc(1, 0, 1, "/sbin/init"),
    _proc(210, 1, 210, "/usr/sbin/sshd -D"),
    _proc(305, 210, 305, "sshd: root@pts/0"),
    _proc(306, 305, 306, "-bash"),
]


def seed_incident(samples: int = 13, step: float = 30.0) -> list[Snapshot]:
    """Six minutes after a hand launch: no log file, GPUs 2, 3, 7 busy with no memory."""
    busy = {2, 3, 7}
    gpus = [_gpu(i, 100 if i in busy else 0, 0) for i in range(8)]
    out = []
    for k in range(samples):
        out.append(
            Snapshot.from_dict(
                {
                    "time": T0 + k * step,
                    "host": "gpu-box",
                    "telemetry": {"source": "nvidia-smi"},
                    "gpus": gpus,
                    "procs": _BASE_PROCS,
                    "logs": [{"path": SEED_LOG, "exists": False}],
                }
            )
        )
    return out


def _run_record(rid: str, pgid: int, started: float, root: str) -> dict[str, Any]:
    return {
        "id": rid,
        "dir": f"{root}/{rid}",
        "command": "python3 -m dflash_train.train --target-gpus 0-4 --drafter-gpus 5-7",
        "pid": pgid,
        "pgid": pgid,
        "start_ticks": 1000 + pgid,
        "started_at": started,
        "log_path": f"{root}/{rid}/output.log",
        "events_path": f"{root}/{rid}/events.jsonl",
    }


def _step_lines(first: int, n: int) -> list[str]:
    out = []
    for s in range(first, first + n):
        loss = 6.0 / (1 + s / 40)
        out.append(
            f"step={s} loss={loss:.3f} acc={0.2 + s / 1000:.3f} tok/s={2700 + (s * 37) % 300}"
        )
    return out


def healthy_run(samples: int = 12, step: float = 5.0) -> list[Snapshot]:
    """A run of the pipeline on 5 target + 3 drafter GPUs, logging steps, all labels ok."""
    root = "/root/.local/state/dflash-tui/runs"
    rid, pgid, started = "20251202-095500-1a2b", 4242, T0 - 300
    procs = [
        *_BASE_PROCS,
        _proc(pgid, 1, pgid, f"sh {root}/{rid}/run.sh {root}/{rid}"),
        _proc(
            4243, pgid, pgid, "python3 -m dflash_train.train --target-gpus 0-4 --drafter-gpus 5-7"
        ),
        _proc(4250, 4243, pgid, "python3 -m dflash_train.train (compile worker)", state="D"),
        _proc(5000, 1, 5000, "[defunct]", state="Z"),
    ]
    gpus = [_gpu(i, 96 if i < 5 else 88, 61234 if i < 5 else 40960) for i in range(8)]
    gpu_procs = [
        {
            "pid": 4243,
            "gpu_uuid": f"GPU-{i:08d}",
            "used_mib": g["mem_used_mib"] - 600,
            "name": "python3",
        }
        for i, g in enumerate(gpus)
    ]
    head = [
        "dflash_train.train: preset full, target GPUs 0-4, drafter GPUs 5-7",
        '{"event": "model_loaded", "t": 1764669310.0}',
        "compiled flex_attention (12 shapes) in 41.2s",
        "warmed every shape; starting the workers",
    ]
    out = []
    for k in range(samples):
        lines = (head if k == 0 else []) + _step_lines(100 + k * 10, 10)
        out.append(
            Snapshot.from_dict(
                {
                    "time": T0 + k * step,
                    "host": "gpu-box",
                    "telemetry": {"source": "nvml"},
                    "gpus": gpus,
                    "gpu_procs": gpu_procs,
                    "procs": procs,
                    "run": _run_record(rid, pgid, started, root),
                    "logs": [
                        {
                            "path": f"{root}/{rid}/output.log",
                            "exists": True,
                            "size": 81234 + k * 700,
                            "lines": lines,
                            "is_run_log": True,
                        }
                    ],
                }
            )
        )
    return out


def _points(first: int, n: int, t0: float, per_step: float) -> list[list[float | int]]:
    """Step points as the probe's ``steps`` key sends them: [time, step, loss, tok/s]."""
    return [
        [
            t0 + (s - first) * per_step,
            s,
            6.0 / (1 + s / 300) + (s * 37 % 10) / 50,
            2600 + s * 7 % 400,
        ]
        for s in range(first, first + n)
    ]


def history_run(samples: int = 41, step: float = 30.0) -> list[Snapshot]:
    """The History tab's scene: the first sample brings the event stream of the hour before
    the app attached (the probe's backlog), then 20 minutes of samples, 10 steps each; the GPUs'
    utilisation, power and memory change over time (a drop from minute 10 to 12)."""
    base = healthy_run(1)[0]
    root = "/root/.local/state/dflash-tui/runs"
    events = f"{root}/20251202-095500-1a2b/events.jsonl"
    out, offset = [], 0
    for k in range(samples):
        dip = 20 <= k < 24
        gpus = [
            _gpu(
                i,
                (30 if dip else 95) - i,
                40000 + i * 2000 + k * 300,
                power=(180.0 if dip else 610.0) - 9 * i,
            )
            for i in range(8)
        ]
        pts = (
            _points(0, 1200, T0 - 3600, 3.0)
            if k == 0
            else _points(1190 + k * 10, 10, T0 + k * step - 27, 3.0)
        )
        d = {"time": T0 + k * step, "host": "gpu-box", "telemetry": {"source": "nvml"},
             "gpus": gpus, "steps": {"path": events, "from": offset, "points": pts}}  # fmt: skip
        offset += 150 * len(pts)
        out.append(replace(Snapshot.from_dict(d), procs=base.procs, run=base.run, logs=base.logs))
    return out


def gpu_processes(samples: int = 2, step: float = 5.0) -> list[Snapshot]:
    """The healthy run beside another user's job on GPU 5 and an orphan on GPU 2, with the CPU
    %, RSS and start ticks the probe reads (the GPU process table's scene)."""
    base = healthy_run(samples, step)
    extra = [
        _proc(7100, 1, 7100, "python3 eval.py --ckpt /data/ckpt-1200", user="alice"),
        _proc(6600, 1, 6600, "python3 -m dflash_train.train (left over)", start=12000),
    ]
    usage = {4243: (812.5, 48_000_000), 7100: (97.0, 6_200_000), 6600: (0.0, 31_500_000)}
    gpu_procs = [
        {"pid": 7100, "gpu_uuid": "GPU-00000005", "used_mib": 20480, "name": "python3"},
        {"pid": 6600, "gpu_uuid": "GPU-00000002", "used_mib": 71000, "name": "python3"},
    ]
    more = tuple(x for x in (GpuProcess.from_dict(g) for g in gpu_procs) if x is not None)
    procs = [x for x in (Proc.from_dict(p) for p in extra) if x is not None]
    out = []
    for snap in base:
        with_usage = tuple(
            replace(p, cpu_pct=usage[p.pid][0], rss_kb=usage[p.pid][1]) if p.pid in usage else p
            for p in (*snap.procs, *procs)
        )
        out.append(
            replace(
                snap,
                procs=with_usage,
                gpu_procs=snap.gpu_procs + more,
                boot_time=T0 - 86400.0,
                clk_tck=100,
            )
        )
    return out


def _machine(free_gib: float) -> dict[str, Any]:
    """An HGX host's readings: 2 TiB of RAM, no swap, the run root on a 3.5 TiB NVMe."""
    gib = 1 << 30
    return {
        "mem_total_kb": 2_113_000_000, "mem_available_kb": 1_870_000_000,
        "swap_total_kb": 0, "swap_free_kb": 0, "oom_kill": 0,
        "disks": [{"what": "run_root", "path": "/root/.local/state/dflash-tui/runs",
                   "exists": True, "total_bytes": int(3580 * gib),
                   "free_bytes": int(free_gib * gib), "total_inodes": 240_000_000,
                   "free_inodes": 239_000_000}],
        "checkpoint": {"path": "/root/.local/state/dflash-tui/runs/20251202-095500-1a2b/"
                       "checkpoints/step_00000200.pt", "step": 200, "mtime": T0 - 60,
                       "size_bytes": 12 * gib},
    }  # fmt: skip


def _workers(now: float, stuck_since: float | None) -> list[dict[str, Any]]:
    """The loader, 5 target and 3 drafter workers' heartbeats; drafter 1 stuck since
    ``stuck_since`` (the others then wait on it), else all stepping."""
    out = [{"role": "loader", "index": 0, "gpu": None, "step": 812, "queue": 4,
            "state": "wait:queue", "since": now - 2, "time": now - 1}]  # fmt: skip
    for j in range(5):
        out.append({"role": "target", "index": j, "gpu": j, "step": 810 - j % 2, "queue": 4,
                    "state": "wait:queue" if stuck_since else "work", "since": now - 1,
                    "time": now - 1})  # fmt: skip
    for i in range(3):
        stuck = stuck_since is not None and i == 1
        out.append({"role": "drafter", "index": i, "gpu": 5 + i, "step": 800, "queue": 4,
                    "state": "work" if stuck or not stuck_since else "wait:barrier",
                    "since": stuck_since if stuck else now - 1, "time": now - 1})  # fmt: skip
    return out


def host_health(samples: int = 12, step: float = 5.0) -> list[Snapshot]:
    """The healthy run with the host's readings and the workers' heartbeats: the run root's
    disk shrinking toward full, and drafter 1 stuck on step 800 since 30 s before the first
    sample while the others wait on it (the host strip's scene)."""
    out = []
    for k, snap in enumerate(healthy_run(samples, step)):
        stuck = T0 - 30.0
        d = {"time": snap.time, "machine": _machine(140.0 - 0.5 * k),
             "workers": _workers(snap.time, stuck)}  # fmt: skip
        extra = Snapshot.from_dict(d)
        out.append(replace(snap, machine=extra.machine, workers=extra.workers))
    return out
