"""A launch into a run root without room, on real filesystems.

Each root is a real tmpfs of a few KiB or a few inodes, a tmpfs filled up to its last pages, or
a read-only bind mount. A launch there must fail at once with the cause, never report
`starting` without a PID, and leave no job that nothing can find: afterwards no live process
carries a marker of the root, or, when one does, a kill stops it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from control_faults import marked, read_only, record, tmpfs

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.control.kill import kill_latest
from dflash_tui.core.control.launch import launch
from dflash_tui.core.link.transport import LocalTransport

JOB = "exec sleep 60"


def _fill(root: Path, leave_kib: int) -> None:
    """Fill a tmpfs until only about ``leave_kib`` KiB are left (a real ENOSPC)."""
    import os

    st = os.statvfs(root)
    free = st.f_bavail * st.f_frsize
    (root / "filler").write_bytes(b"\0" * max(free - leave_kib * 1024, 0))


def tiny(size: str, inodes: int | None = None, leave_kib: int | None = None) -> Callable:
    def make(path: Path) -> AbstractContextManager[Path]:
        return tmpfs(path, size, inodes)

    make.leave_kib = leave_kib  # type: ignore[attr-defined]
    return make


CASES = {
    # fault: (mount, the cause the launch must name)
    "tmpfs of 16 KiB": (tiny("16k"), "no space left on"),
    "tmpfs of 8 inodes": (tiny("1m", inodes=8), "no free inodes left on"),
    "tmpfs filled to 8 KiB": (tiny("2m", leave_kib=8), "no space left on"),
    "read-only bind mount": (read_only, "read-only"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_launch_without_room_fails_at_once_with_its_cause(
    tmp_path: Path, case: str
) -> None:
    make, cause = CASES[case]
    t = LocalTransport()
    with make(tmp_path / "runs") as root:
        leave = getattr(make, "leave_kib", None)
        if leave is not None:
            _fill(root, leave)
        h = HostConfig(command=JOB, run_root=str(root), workdir=str(tmp_path))
        t0 = time.monotonic()
        res = await launch(t, h, start_window=1.0, poll=0.05, lock_wait=2.0)
        took = time.monotonic() - t0
        live = marked(root)
        # A job that runs is one kill can find and stop.
        k = await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False) if live else None
        untracked = len(marked(root)) if live else 0
        false = int(res.ok or res.state == "starting" or (res.ok and res.pid is None))
        named = cause in (res.error or "") and took < 10
        record(f"room: {case}", untracked=untracked, false=false, ok=named)
        assert not res.ok and res.state != "starting", res
        assert cause in (res.error or ""), res
        assert took < 10, f"{took:.1f} s to fail: not at once"
        assert not live, (live, k)
        assert not list(root.glob("2*")), "a failed launch leaves no half run directory"


async def test_a_launch_into_a_root_with_room_still_starts(tmp_path: Path) -> None:
    """The check is no false alarm: a tmpfs with room runs the job, and kill stops it."""
    t = LocalTransport()
    with tmpfs(tmp_path / "runs", "4m") as root:
        h = HostConfig(command=JOB, run_root=str(root), workdir=str(tmp_path))
        res = await launch(t, h, start_window=0.3, poll=0.05)
        assert res.ok and res.pid is not None, res
        assert (await kill_latest(t, h, grace=1, poll=0.05, check_gpu=False)).ok
        assert not marked(root)
