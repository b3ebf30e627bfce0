"""The host readings (the probe's ``machine`` key) of the shell probe, the fallback for hosts
without python3, against the python probe on this machine: the same /proc/meminfo, swap and
OOM-kill numbers and the same free space of the run root, here a real tmpfs of a known size
(its root spelled with ``~`` too, as the default run root is)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.proberun import run_probe
from faults.control_faults import tmpfs
from unit.test_ssh_shell_probe import no_python_path, shell_probe

from dflash_tui.core.base.snapshot import Snapshot

MIB = 1 << 20


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "home", "8m", inodes=4000) as m:
        yield m


def _agree(sh: dict[str, Any], py: dict[str, Any]) -> None:
    for k in ("mem_total_kb", "swap_total_kb", "oom_kill"):
        assert sh[k] == py[k] and isinstance(sh[k], int), k
    # read a moment apart on a shared machine: available memory and free swap move a little
    for k in ("mem_available_kb", "swap_free_kb"):
        assert abs(sh[k] - py[k]) <= max(0.05 * py[k], 64 * 1024), (k, sh[k], py[k])


def test_shell_probe_reads_memory_swap_oom_and_the_run_roots_disk(
    mount: Path, tmp_path: Path
) -> None:
    (mount / "runs").mkdir()
    (mount / "filler").write_bytes(b"\1" * (3 * MIB))  # 3 of the 8 MiB used
    env = dict(os.environ, HOME=str(mount))
    path = no_python_path(tmp_path / "bin")
    for root, exists in (("~/runs", True), (f"{mount}/not/yet/runs", False)):
        args = (f"--run-root={root}", "--no-nvml")
        py = run_probe(*args, env=env)["machine"]
        sh = shell_probe(*args, env=env, path=path)["machine"]
        _agree(sh, py)
        (dsh,), (dpy,) = sh["disks"], py["disks"]
        assert dsh == dpy, (dsh, dpy)  # a quiet tmpfs: byte for byte
        assert dsh["what"] == "run_root" and dsh["exists"] is exists
        assert dsh["path"] == root.replace("~", str(mount))  # expanded, as control.sh does
        assert dsh["total_bytes"] == 8 * MIB and 4 * MIB < dsh["free_bytes"] <= 5 * MIB
        assert dsh["total_inodes"] == 4000 and 3990 <= dsh["free_inodes"] < 4000
    m = Snapshot.from_dict(shell_probe(f"--run-root={mount}", path=path)).machine
    assert m is not None and m.mem_total_kb == py["mem_total_kb"]
    assert m.disk("run_root") is not None and m.kernel_source is None


def test_busybox_shell_probe_reads_the_same(mount: Path, tmp_path: Path) -> None:
    path = no_python_path(tmp_path / "bb", True)
    sh = shell_probe(f"--run-root={mount}", path=path)["machine"]
    py = run_probe(f"--run-root={mount}", "--no-nvml")["machine"]
    _agree(sh, py)
    assert sh["disks"][0]["total_bytes"] == py["disks"][0]["total_bytes"] == 8 * MIB
    assert abs(sh["disks"][0]["free_bytes"] - py["disks"][0]["free_bytes"]) <= 64 * 1024


def test_same_keys_and_no_disk_without_a_run_root(tmp_path: Path) -> None:
    """Both probes send the same machine keys; what the shell probe cannot read (kernel log,
    NVML, checkpoint) is null, never a guess; no run root, no disks."""
    sh = shell_probe(path=no_python_path(tmp_path / "bin"))["machine"]
    py = run_probe("--no-nvml")["machine"]
    assert set(sh) == set(py) and sh["disks"] == py["disks"] == []
    assert sh["kernel_log"] is None and sh["nvml"] is None and sh["checkpoint"] is None
