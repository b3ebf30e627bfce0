"""A one-shot sample taken between two of the stream's (the refresh key) carries no log line,
step event, kernel-log or Xid event: the stream delivers those, once (core/link/refresh.py)."""

from __future__ import annotations

from dataclasses import replace

from dflash_tui.app import scenes
from dflash_tui.core.base.machine import GpuHealth, KernelLine, Machine
from dflash_tui.core.base.snapshot import StepPoints
from dflash_tui.core.link.refresh import between


def test_the_once_sample_keeps_its_readings_and_drops_what_the_stream_brings() -> None:
    last, fresh = scenes.healthy_run(samples=2)
    last = replace(last, interval=2.0, machine=Machine(xid_watch="nvml"))
    assert fresh.logs and fresh.logs[0].lines  # the scene's sample has lines to drop
    fresh = replace(
        fresh,
        interval=None,  # a --once probe's
        steps=StepPoints("/r/events.jsonl", 0, ((1.0, 1, 2.0, 3.0),)),
        machine=Machine(
            mem_available_kb=123,
            kernel_xids=(KernelLine(1.0, "NVRM: Xid 79", 79),),
            kernel_ooms=(KernelLine(1.0, "Out of memory"),),
            gpu_health=(GpuHealth(0, xids=((1.0, 79),), pcie_replay=4),),
            xid_watch="one sample: NVML tells Xid events only to a watcher (--interval)",
        ),
    )
    out = between(fresh, last)
    assert out.time == fresh.time and out.gpus == fresh.gpus and out.procs == fresh.procs
    assert [(x.path, x.size, x.exists) for x in out.logs] == [
        (x.path, x.size, x.exists) for x in fresh.logs
    ]
    assert all(x.lines == () and x.gaps == () and x.resume is None for x in out.logs)
    assert out.steps is None and out.interval == 2.0
    assert out.machine is not None and out.machine.mem_available_kb == 123
    assert out.machine.kernel_xids == () and out.machine.kernel_ooms == ()
    assert out.machine.gpu_health[0].xids == () and out.machine.gpu_health[0].pcie_replay == 4
    assert out.machine.xid_watch == "nvml"
