"""A sample taken now, between two of the stream's (the app's refresh key), made to fit in.

The stream's probe (feed.py) keeps state between its samples: where each log's tail stopped,
the step events read so far, the kernel log and NVML's Xid events since the last sample. A
one-shot probe run beside it reads the machine afresh (GPUs, processes, the run, memory,
disks) but none of that state is its own to advance: its log lines, step events and kernel
or Xid events would be shown twice, once now and once more when the stream's next sample
brings them. So those parts are dropped from the one-shot sample here (pure); the stream
still delivers every one of them, once.
"""

from __future__ import annotations

from dataclasses import replace

from dflash_tui.core.base.snapshot import LogState, Snapshot


def _no_lines(log: LogState) -> LogState:
    return replace(log, lines=(), gaps=(), truncated=False, skipped_bytes=0, resume=None)


def between(fresh: Snapshot, last: Snapshot | None) -> Snapshot:
    """``fresh`` (a ``--once`` sample) without what only the stream may deliver, and with the
    stream's interval (the app judges overdue samples by it)."""
    machine = fresh.machine
    if machine is not None:
        prev = last.machine if last is not None else None
        health = tuple(replace(h, xids=()) for h in machine.gpu_health)
        machine = replace(
            machine,
            kernel_xids=(),
            kernel_ooms=(),
            gpu_health=health,
            # The one-shot probe cannot watch Xid events; the stream's watcher still does.
            xid_watch=prev.xid_watch if prev is not None else machine.xid_watch,
        )
    return replace(
        fresh,
        logs=tuple(_no_lines(log) for log in fresh.logs),
        steps=None,
        machine=machine,
        interval=last.interval if last is not None else fresh.interval,
    )
