"""Named settings of the diagnosis: what "near zero", "high" and "how long" mean."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.timings import START_WINDOW_S


@dataclass(frozen=True)
class Thresholds:
    # A GPU reading at or below this is "no memory used" (nvidia-smi's memory.used).
    near_zero_mib: int = 64
    # Utilisation at or above this is "busy" (phantom load when nothing holds memory).
    high_util_pct: int = 90
    # Utilisation above this, or memory above near_zero_mib, is "activity" on a GPU.
    activity_util_pct: int = 5
    # Memory used / total at or above this is near OOM.
    near_oom_fraction: float = 0.95
    # nvidia-smi clocks_event_reasons bits that mean a real slowdown: HW slowdown (0x8),
    # SW thermal (0x20), HW thermal (0x40), HW power brake (0x80). The SW power cap (0x4) is
    # what a GPU at full load normally reports, so it is not a fault.
    throttle_mask: int = 0x8 | 0x20 | 0x40 | 0x80
    # In live mode a label must hold this long before it is reported (one-shot: at once).
    persist_s: float = 6.0
    # no-progress: no new step for this many times the usual step time ...
    no_progress_factor: float = 5.0
    # ... and never less than this many seconds.
    no_progress_min_s: float = 60.0
    # A run is "starting" for this long after launch (supervisord's startsecs).
    start_window_s: float = START_WINDOW_S
    # start-up grace: a live run's GPUs are not "idle" for this long after its launch while
    # it has not stepped yet (loading the model, compiling: no load is expected there).
    startup_grace_s: float = 600.0
    # After this long without a run log, a starting/running run's missing log is an error.
    log_grace_s: float = 10.0
    # host-memory-low: MemAvailable below this fraction of MemTotal ...
    host_mem_low_fraction: float = 0.05
    # ... or swap in use above this fraction of SwapTotal.
    swap_used_fraction: float = 0.5
    # disk-low: free space (or free inodes) below this fraction of the filesystem ...
    disk_low_fraction: float = 0.05
    # ... or full within this many seconds at the rate it shrank over the recent samples
    # (the next checkpoint not fitting is always low).
    disk_full_horizon_s: float = 3600.0
    # checkpoint-stale: a live, stepping run's newest checkpoint older than this (or none yet).
    checkpoint_stale_s: float = 7200.0
    # worker-stalled: a worker busy on its own step (or silent while the others beat) for
    # this many times the usual step time ...
    worker_stall_factor: float = 5.0
    # ... and never less than this many seconds.
    worker_stall_min_s: float = 60.0


DEFAULT = Thresholds()


def thresholds_for(host: HostConfig) -> Thresholds:
    """The defaults with the config's ``[thresholds]`` (names checked by config_keys)."""
    if not host.thresholds:
        return DEFAULT
    kinds = {f.name: f.type for f in fields(Thresholds)}
    values: dict[str, Any] = {
        k: int(v) if kinds[k] == "int" else float(v) for k, v in host.thresholds
    }
    return replace(DEFAULT, **values)
