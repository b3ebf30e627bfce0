"""Shared parts of the control fault suite: real mounts, the truth
about a run root's live jobs read straight from /proc, and the tally of outcomes.

The truth never comes from the code under test: a job of a run root is any live process whose
environment holds ``DFLASH_RUN_DIR=ROOT/...`` (every job's processes inherit it), plus the PIDs
the jobs themselves write down. Each test records one line per fault tried in the file named by
``DFLASH_FAULT_TALLY`` (when set), so the same suite can be totalled on two revisions of the
code and compared: ``tests/faults/tally.py`` sums them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def need_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the control fault suite as root (mounts)", pytrace=False)
        pytest.skip("making a tmpfs or a read-only bind mount needs root")


@contextmanager
def tmpfs(path: Path, size: str, inodes: int | None = None) -> Iterator[Path]:
    """A real tmpfs of ``size`` (and ``inodes``) on ``path``; unmounted afterwards."""
    need_root()
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        kill_marked(path)
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """``path`` bind-mounted read-only onto itself; unmounted afterwards."""
    need_root()
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
        yield path
    finally:
        kill_marked(path)
        subprocess.run(["umount", "-l", str(path)], check=False)


def proc_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    return proc_state(pid) not in (None, "Z")


def marked(root: Path) -> set[int]:
    """Live processes carrying a DFLASH_RUN_DIR marker of a run under ``root``."""
    want = f"DFLASH_RUN_DIR={root}/".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(v.startswith(want) for v in env.split(b"\0")) and alive(int(entry.name)):
            found.add(int(entry.name))
    return found


def jobs(root: Path) -> set[int]:
    """The process groups of the live marked processes: one per job started."""
    groups = set()
    for pid in marked(root):
        try:
            groups.add(os.getpgid(pid))
        except OSError:
            pass
    return groups


def kill_marked(root: Path, pids: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    """The test's own cleanup: each job process by PID (found by its marker, or written down
    by the job), never by name."""
    for pid in marked(root) | set(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def pids_in(path: Path) -> set[int]:
    try:
        return {int(x) for x in path.read_text().split()}
    except OSError:
        return set()


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def record(
    fault: str, *, doubled: int = 0, untracked: int = 0, false: int = 0, ok: bool = True
) -> None:
    """One fault tried; survived when nothing was doubled, lost or falsely reported and the
    outcome was the one wanted (``ok``: e.g. a failed launch that names its cause, at once)."""
    out = os.environ.get("DFLASH_FAULT_TALLY")
    if not out:
        return
    row: dict[str, object] = {"fault": fault, "doubled": doubled, "untracked": untracked}
    row["false"] = false
    row["survived"] = ok and not (doubled or untracked or false)
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
