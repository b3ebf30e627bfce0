"""The probe's process table reads what a process keeps for its life once (issue 16)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

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


def test_unchanged_stat_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle process's stat bytes repeat: its row is the previous one, not a new parse; a
    process whose stat changes (a busy one) is parsed every sample, and both rows are what a
    fresh table reads."""
    parsed: list[int] = []
    real = probe.parse_stat

    def spy(text: str):  # type: ignore[no-untyped-def]
        parsed.append(int(text.split(" ", 1)[0]))
        return real(text)

    monkeypatch.setattr(probe, "parse_stat", spy)
    idle = subprocess.Popen(["sleep", "60"])
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        # Past its exec and start-up: until then its stat bytes still change (comm, ticks).
        stat = Path(f"/proc/{idle.pid}/stat")
        last = b""
        for _ in range(50):
            now = stat.read_bytes()
            if now == last and b"(sleep)" in now:
                break
            last = now
            time.sleep(0.1)
        procs = probe.Procs()
        for _ in range(3):
            rows = {r["pid"]: r for r in procs.read([])}
            time.sleep(0.3)
        assert parsed.count(idle.pid) == 1
        assert parsed.count(busy.pid) == 3  # its ticks move
        assert rows[idle.pid]["cpu_pct"] == 0.0
        fresh = {r["pid"]: r for r in probe.Procs().read([])}
        assert rows[idle.pid] == {**fresh[idle.pid], "cpu_pct": 0.0}
        assert rows[busy.pid]["cmd"] == fresh[busy.pid]["cmd"] == "sh -c while :; do :; done"
    finally:
        for p in (idle, busy):
            p.kill()
            p.wait()


def test_read_bytes_reads_a_file_that_answers_in_pieces(tmp_path: Path) -> None:
    """Up to the limit, across short reads (a FIFO here; /proc's seq files do the same)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"exec >{fifo}; printf abc; sleep 0.3; printf defgh"])
    try:
        assert probe.read_bytes(str(fifo)) == b"abcdefgh"
    finally:
        writer.wait()
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert probe.read_bytes(str(tmp_path / "f"), 10) == b"x" * 10
