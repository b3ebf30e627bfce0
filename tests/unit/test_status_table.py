"""The ``status`` table's supervisor line (pure): PID, host, since, restarts, policy, and
whether its heartbeat is fresh, stale, or it stopped."""

from __future__ import annotations

from dflash_tui.cli.table import supervisor_line
from dflash_tui.core.base.supervision import SupervisorRecord

T0 = 1_800_000_000.0


def rec(**kw: object) -> SupervisorRecord | None:
    doc = {
        "pid": 4242,
        "host": "gpu-a",
        "started_at": T0,
        "heartbeat_at": T0 + 100,
        "heartbeat_s": 2,
        "restarts": 2,
        "policy": {"enabled": True},
        "mode": "daemon",
        **kw,
    }
    return SupervisorRecord.from_dict(doc)  # fmt: skip


def test_fresh() -> None:
    line = supervisor_line(rec(), T0 + 101)
    assert line == ("supervisor: PID 4242 on gpu-a since 2027-01-15T08:00:00Z, fresh (heartbeat "
                    "1s ago), 2 restarts, auto-restart on")  # fmt: skip


def test_stale_stopped_none_and_hostile_host() -> None:
    assert supervisor_line(rec(restarts=1), T0 + 160).endswith(
        "STALE (heartbeat 60s ago), 1 restart, auto-restart on"
    )
    assert "stopped at 2027-01-15T08:01:50Z" in supervisor_line(rec(stopped_at=T0 + 110), T0 + 900)
    assert supervisor_line(None, T0).startswith("supervisor: none")


def test_render_prints_the_host_name_safely() -> None:
    from dflash_tui.cli.table import render
    from dflash_tui.core.base.config_types import HostConfig
    from dflash_tui.core.base.snapshot import Snapshot
    from dflash_tui.core.diagnosis.tracker import Tracker

    host = HostConfig()
    sup = {"pid": 1, "host": "x\x1b]0;T\x07", "heartbeat_at": T0 + 100, "started_at": T0}
    snap = Snapshot.from_dict({"time": T0 + 101, "supervisor": sup})
    diag = Tracker(host.topology, live=False).add(snap)
    line = str(render(diag, host)[1])
    assert line.startswith("supervisor: PID 1 on x\\x1b]0;T\\x07 since") and "\x1b" not in line


def test_a_live_supervisor_that_cannot_write_is_not_stale() -> None:
    """Its heartbeat is old, but its process (this one, by PID and start time) runs: status
    says so, with the cause the record last held; a dead one's old heartbeat is STALE."""
    import os
    import socket

    from dflash_tui.core.base.local_proc import start_ticks

    me = {"pid": os.getpid(), "host": socket.gethostname(), "start_ticks": start_ticks(os.getpid()),
          "write_error": "No space left on device"}  # fmt: skip
    line = supervisor_line(rec(**me), T0 + 160)
    assert "RUNNING but not writing its record (heartbeat 60s ago)" in line, line
    assert line.endswith("cannot write its files: No space left on device"), line
    gone = supervisor_line(rec(**{**me, "start_ticks": (me["start_ticks"] or 0) + 1}), T0 + 160)
    assert "STALE (heartbeat 60s ago)" in gone, gone
