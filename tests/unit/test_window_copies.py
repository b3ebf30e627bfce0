"""What a tracker's window holds of each sample's process table (Snapshot.keep_for_window):
no process records, one shared table of (PID, group, session, command) while only readings
move, and lookups that would need the records refused, not answered from an empty table."""

from __future__ import annotations

from typing import Any

import pytest

from dflash_train.topology import Topology
from dflash_tui.core.base.snapshot import Proc, Snapshot
from dflash_tui.core.diagnosis.tracker import Tracker

TOPO = Topology.parse("0:1")
RUN = 5000


def _sample(i: int, churn: bool) -> dict[str, Any]:
    rows = [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "cmd": "init"}]
    # 400 processes, half of them with readings that move every sample
    rows += [{"pid": 100 + k, "ppid": 1, "pgid": 100 + k, "sid": 100 + k, "cmd": f"job {k}",
              "cpu_pct": float((i + k) % 13) if k % 2 else 1.0, "rss_kb": 1000 + i * (k % 2)}
             for k in range(396)]  # fmt: skip
    rows.append({"pid": RUN, "ppid": 1, "pgid": RUN, "sid": RUN, "cmd": "torchrun"})
    rows += [{"pid": RUN + 1 + g, "ppid": RUN, "pgid": RUN, "sid": RUN, "cmd": f"rank {g}",
              "cpu_pct": 90.0 + i % 5} for g in range(2)]  # fmt: skip
    if churn:  # a new short-lived process every sample
        rows.append({"pid": 30_000 + i, "ppid": 100, "pgid": 100, "sid": 100, "cmd": f"sh {i}"})
    run = {"id": "r", "dir": "/r", "pid": RUN, "pgid": RUN, "started_at": 0.0}
    gprocs = [{"pid": RUN + 1 + g, "gpu_uuid": f"GPU-{g}", "used_mib": 100} for g in range(2)]
    gpus = [{"index": g, "uuid": f"GPU-{g}", "util": 90, "mem_used_mib": 100,
             "mem_total_mib": 80_000} for g in range(2)]  # fmt: skip
    return {"time": 1000.0 + i, "gpus": gpus, "gpu_procs": gprocs, "procs": rows, "run": run,
            "telemetry": {"source": "nvml"}}  # fmt: skip


@pytest.mark.parametrize("churn", [False, True], ids=["readings-move", "a-process-a-sample"])
def test_the_window_holds_no_process_records_and_one_table_of_groups(churn: bool) -> None:
    tracker = Tracker(TOPO)
    for i in range(150):
        tracker.add(Snapshot.from_dict(_sample(i, churn)))
    kept = list(tracker.history)
    assert len(kept) == 61
    records = [p for s in kept for p in s.procs]
    assert records == []  # before: 400 records a sample, 200 of them new each sample
    holds = [s.__dict__["_window_rows"] for s in kept]
    rows = {id(r): r for table in holds for r in table}
    # every sample's rows, each row held once across the window: a table and the churn
    assert len(rows) == 400 + (61 if churn else 0)
    assert len({id(t) for t in holds}) == (61 if churn else 1)
    assert not any(isinstance(x, Proc) for s in kept for x in s.__dict__.values())
    # what the OOM rule asks of any sample, for any group, is still the table's answer
    for s, i in zip(kept, range(150 - 61, 150), strict=True):
        full = Snapshot.from_dict(_sample(i, churn))
        for group in (RUN, 100, 1, 4242):
            assert s.member_cmds(group) == full.member_cmds(group)
            assert s.member_cmds(group) == {p.pid: p.cmd for p in full.members(group)}
    # and nothing answers from the table it no longer holds
    old = kept[0]
    for ask in (lambda: old.proc(1), lambda: old.group_of(RUN), lambda: old.members(RUN),
                lambda: old.parents):  # fmt: skip
        with pytest.raises(LookupError):
            ask()
