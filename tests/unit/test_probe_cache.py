"""The probe's process table reads what a process keeps for its life once (issue 16)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from dflash_tui.core.probe import main as probe


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path the probe's process table reads, in order (the real reads still happen)."""
    seen: list[str] = []
    real = probe.read_bytes

    def spy(path: str, limit: int = 1 << 20) -> bytes:
        seen.append(path)
        return real(path, limit)

    monkeypatch.setattr(probe, "read_bytes", spy)
    yield seen


def test_cmdline_read_once_across_samples(reads: list[str]) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        procs, errors = probe.Procs(), []  # type: ignore[var-annotated]
        for _ in range(3):
            rows = procs.read(errors)
            assert any(r["pid"] == sleeper.pid and r["cmd"] == "sleep 60" for r in rows)
        base = f"/proc/{sleeper.pid}/"
        assert reads.count(base + "cmdline") == 1
        assert reads.count(base + "status") == 1
        assert reads.count(base + "stat") == 3
    finally:
        sleeper.kill()
        sleeper.wait()


def test_gone_pid_leaves_the_cache() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    procs = probe.Procs()
    procs.read([])
    assert any(k[0] == sleeper.pid for k in procs.static)
    sleeper.kill()
    sleeper.wait()
    procs.read([])
    assert not any(k[0] == sleeper.pid for k in procs.static)
