"""The pipeline's worker heartbeats (dflash_train.events.Heartbeats): ``since`` follows the step a
busy worker is on, and under torchrun the other ranks' records reach rank 0's stream through
the job's store (dflash_train.dist.StoreRelay, here over torch's real in-process HashStore)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from dflash_train.events import EventLog, Heartbeats, beat, read_events, state

torch_dist = pytest.importorskip("torch.distributed")


def _in_thread(fn) -> None:  # type: ignore[no-untyped-def]
    t = threading.Thread(target=fn)
    t.start()
    t.join()


def test_a_busy_worker_that_steps_is_not_stuck_on_its_since(tmp_path: Path) -> None:
    hb = Heartbeats(EventLog(tmp_path / "e.jsonl"), {"DFLASH_HEARTBEAT_S": "0.01"})
    seen: list[float] = []

    def work() -> None:
        hb.join("target", 0, None)  # starts in "work" and never waits: the bottleneck
        for n in range(3):
            beat(n, 0)
            seen.append(hb.workers[0]["since"])
            time.sleep(0.02)
        state("work")  # no change of state: no new since
        assert hb.workers[0]["since"] == seen[-1]

    _in_thread(work)
    assert seen[0] < seen[1] < seen[2]  # each new step restarts the clock

    def wait_then_same_step() -> None:
        hb.join("drafter", 0, None)
        beat(5, 0)
        state("wait:barrier")
        since = hb.workers[1]["since"]
        time.sleep(0.02)
        beat(5, 1)  # the same step again while waiting: since stays
        assert hb.workers[1]["since"] == since

    _in_thread(wait_then_same_step)


def test_other_ranks_reach_rank_0_through_the_store(tmp_path: Path) -> None:
    from dflash_train.dist import StoreRelay

    store = torch_dist.HashStore()
    r0 = Heartbeats(EventLog(tmp_path / "rank0.jsonl"), {"RANK": "0", "DFLASH_HEARTBEAT_S": "0.01"})
    r1_log = tmp_path / "rank1.jsonl"
    r1 = Heartbeats(EventLog(r1_log), {"RANK": "1", "DFLASH_HEARTBEAT_S": "0.01"})
    r0.relay, r1.relay = StoreRelay(store, 0, 2), StoreRelay(store, 1, 2)
    _in_thread(lambda: r0.join("drafter", 0, 0))

    def stalled() -> None:
        r1.join("drafter", 1, 1)
        beat(5, 2)

    _in_thread(stalled)
    r0.emit_due()  # rank 1 has published nothing yet: rank 0's own only
    assert [(e["rank"], e["role"], e["index"]) for e in read_events(tmp_path / "rank0.jsonl")] == [
        (0, "drafter", 0)
    ]
    r1.emit_due()
    assert not r1_log.exists()  # rank 1 writes nothing itself
    published = json.loads(store.get("dflash-heartbeat/1"))["time"]
    time.sleep(0.05)
    r0.emit_due()
    last = read_events(tmp_path / "rank0.jsonl")[-2:]
    assert [(e["rank"], e["role"], e["index"]) for e in last] == [
        (0, "drafter", 0),
        (1, "drafter", 1),
    ]
    assert last[1]["step"] == 5 and last[1]["time"] == published  # its own time, not rank 0's
    assert last[0]["time"] > published
