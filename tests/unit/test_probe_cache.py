"""The probe's process table reads what a process keeps for its life once, and an idle
stranger only on its turn."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dflash_tui.core.probe import procs as probe


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path the probe's process table reads, in order (the real reads still happen)."""
    seen: list[str] = []
    real = probe.read_bytes

    def spy(path: str, limit: int = 1 << 20, page: bool = False) -> bytes:
        seen.append(path)
        return real(path, limit, page)

    monkeypatch.setattr(probe, "read_bytes", spy)
    yield seen


def test_cmdline_read_once_across_samples(reads: list[str]) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        procs, errors = probe.Procs(), []  # type: ignore[var-annotated]
        for _ in range(3):  # watched (a GPU's process): its stat is read every sample
            rows = procs.read(errors, watch={sleeper.pid})
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
    assert str(sleeper.pid) in procs.seen
    sleeper.kill()
    sleeper.wait()
    procs.read([])
    assert str(sleeper.pid) not in procs.seen


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
            rows = {r["pid"]: r for r in procs.read([], watch={idle.pid})}
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


def _settled(pid: int, state: str = " S ") -> None:
    """Wait until the process is past its exec and start-up (or a signal): in ``state``, its
    stat bytes still."""
    stat, last = Path(f"/proc/{pid}/stat"), b""
    for _ in range(50):
        now = stat.read_bytes()
        if now == last and (")" + state).encode() in now:
            return
        last = now
        time.sleep(0.1)
    raise AssertionError(f"{pid} did not settle: {last!r}")


def _stat_reads(reads: list[str], pid: int) -> int:
    return reads.count(f"/proc/{pid}/stat")


def test_an_idle_stranger_is_read_on_its_turn_only(reads: list[str]) -> None:
    """An idle process outside the run and the GPUs: read when new, read again to learn it is
    idle, then once every COLD_EVERY samples; its row is there every sample all the same."""
    idle = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    try:
        for p in idle:
            _settled(p.pid)
        procs, samples = probe.Procs(), 4 * probe.COLD_EVERY
        for i in range(samples):
            rows = {r["pid"]: r for r in procs.read([])}
            for p in idle:  # the first reading has no earlier ticks to measure CPU against
                assert rows[p.pid]["cmd"] == "sleep 60"
                assert rows[p.pid]["cpu_pct"] == (None if i == 0 else 0.0)
        for p in idle:
            n = _stat_reads(reads, p.pid)
            assert 2 + (samples - 2) // probe.COLD_EVERY <= n <= 3 + samples // probe.COLD_EVERY
    finally:
        for p in idle:
            p.kill()
            p.wait()


def test_the_run_busy_and_stopped_processes_are_read_every_sample(reads: list[str]) -> None:
    """A process of a watched group, one that uses CPU and one that is stopped (state T) are
    read every sample; a gone one leaves the table the next sample."""
    group = subprocess.Popen(["sleep", "60"], start_new_session=True)
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    stopped = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["sleep", "60"])
    everyone = (group, busy, stopped, gone)
    try:
        for p in (group, stopped, gone):
            _settled(p.pid)
        stopped.send_signal(signal.SIGSTOP)
        _settled(stopped.pid, " T ")
        procs, samples = probe.Procs(), 2 * probe.COLD_EVERY
        for _ in range(samples):
            procs.read([], groups={group.pid})
        assert _stat_reads(reads, group.pid) == samples
        assert _stat_reads(reads, busy.pid) == samples
        assert _stat_reads(reads, stopped.pid) == samples
        assert _stat_reads(reads, gone.pid) < samples
        gone.kill()
        gone.wait()
        assert gone.pid not in {r["pid"] for r in procs.read([])}
    finally:
        for p in everyone:
            p.kill()
            p.wait()


def _cold_sleeper(start_new_session: bool = False) -> tuple[subprocess.Popen[bytes], probe.Procs]:
    """A settled ``sleep`` that a new table has read until it went cold."""
    p = subprocess.Popen(["sleep", "60"], start_new_session=start_new_session)
    _settled(p.pid)
    procs = probe.Procs()
    for _ in range(3):
        procs.read([])
    assert str(p.pid) in procs.cold
    return p, procs


def test_an_idle_stranger_that_changes_is_seen_within_cold_every_samples() -> None:
    """The bound on how old an idle stranger's row may be: stopped (S -> T) after it went
    cold, its new state shows within COLD_EVERY samples, and from then on every sample."""
    p, procs = _cold_sleeper()
    try:
        p.send_signal(signal.SIGSTOP)
        _settled(p.pid, " T ")
        states = []
        for _ in range(probe.COLD_EVERY):
            states.append({r["pid"]: r for r in procs.read([])}[p.pid]["state"])
        assert "T" in states
        assert states[states.index("T") :] == ["T"] * (len(states) - states.index("T"))
    finally:
        p.kill()
        p.wait()


def test_new_groups_read_every_entry_once(reads: list[str]) -> None:
    """A new run's groups: an idle process that is now in them is read that very sample (and
    every sample after), not on its turn."""
    p, procs = _cold_sleeper(start_new_session=True)
    try:
        before = _stat_reads(reads, p.pid)
        for i in range(probe.COLD_EVERY):
            procs.read([], groups={p.pid})
            assert _stat_reads(reads, p.pid) == before + i + 1
    finally:
        p.kill()
        p.wait()


def _kernel_thread() -> int | None:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(text[text.rfind(")") + 2 :].split()[6]) & probe.PF_KTHREAD:
                return int(name)
    return None


def test_kernel_threads_are_read_on_their_turn_and_never_sent(reads: list[str]) -> None:
    kthread = _kernel_thread()
    if kthread is None:
        pytest.skip("no kernel thread visible in this PID namespace")
    procs, samples = probe.Procs(), 3 * probe.COLD_EVERY
    for _ in range(samples):
        assert kthread not in {r["pid"] for r in procs.read([])}
    assert _stat_reads(reads, kthread) <= 1 + samples // probe.COLD_EVERY + 1


def test_the_line_is_the_sample_as_json_and_rows_that_stood_keep_their_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Probe.dumps: the same document json.dumps gives, the table last; a row that stood is
    the same object as last sample's and is not encoded again, a changed one is."""
    from dflash_tui.core.probe import main as probe_main

    p = subprocess.Popen(["sleep", "60"])
    try:
        _settled(p.pid)
        run = probe_main.Probe(probe_main.parse_args(["--interval=1", "--no-nvml"]))
        lines, samples = [], []
        for _ in range(3):
            sample = run.sample()
            samples.append(json.loads(json.dumps(sample, default=str)))
            lines.append(run.dumps(sample))
        for line, want in zip(lines, samples, strict=True):
            assert json.loads(line) == want
            assert list(json.loads(line))[-1] == "procs"
        table = probe.Procs()
        table.read([])  # new: cpu_pct None
        second = table.read([])  # the same bytes: cpu_pct 0.0, and idle from now on
        enc = probe.RowDelta()
        enc.encode(second)
        third = table.read([])  # not its turn, or its turn with the same bytes: it stood
        (mine,) = [r for r in third if r["pid"] == p.pid]
        assert mine is next(r for r in second if r["pid"] == p.pid)
        encoded: list[int] = []
        real = probe._ROW_JSON

        def spy(row: dict[str, object]) -> str:
            encoded.append(int(row["pid"]))  # type: ignore[call-overload]
            return real(row)

        monkeypatch.setattr(probe, "_ROW_JSON", spy)
        assert json.loads("{" + enc.encode(third) + "}") == {"procs": third}
        assert p.pid not in encoded
        encoded.clear()
        assert enc.encode([dict(mine)]) == f'"procs": [{real(mine)}]'  # a new object: encoded
        assert encoded == [p.pid]
    finally:
        p.kill()
        p.wait()


def _fake(root: Path, pid: int, comm: str = "job", utime: int = 150, start: int = 7777) -> None:
    """A /proc/PID of a sleeping process in its own group and session, under ``root``."""
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    rest = ["S", 1, pid, pid, 0, -1, 0x400100, 0, 0, 0, 0, utime, 50, 0, 0, 0, 0, 0, 0, start]
    (d / "stat").write_text(f"{pid} ({comm}) " + " ".join(map(str, rest)) + " 0 25 0 0\n")
    (d / "status").write_text("Uid:\t0\t0\t0\t0\n")
    (d / "cmdline").write_bytes(comm.encode() + b"\0")


def test_cpu_after_an_idle_stretch_is_measured_since_the_previous_reading(
    tmp_path: Path,
) -> None:
    """A process idle for several readings, then busy: its CPU is what it used since the
    reading before, not spread over the whole idle stretch."""
    _fake(tmp_path, 100)
    table = probe.Procs(str(tmp_path))
    for _ in range(5):  # its own group is watched: read every sample, idle every time
        table.read([], groups={100})
        time.sleep(0.05)
    before = time.monotonic()
    table.read([], groups={100})
    time.sleep(0.1)
    _fake(tmp_path, 100, utime=150 + table.clk_tck)  # one second of CPU since
    (row,) = table.read([], groups={100})
    at_most = time.monotonic() - before  # the two readings were at most this far apart
    assert row["cpu_pct"] >= 100.0 / at_most * 0.99


def test_new_groups_keep_what_the_table_knew(tmp_path: Path) -> None:
    """The run's groups change (a new run): every entry is read, and CPU is still measured
    against the previous readings (not None for the whole table)."""
    _fake(tmp_path, 100)
    table = probe.Procs(str(tmp_path))
    table.read([])
    table.read([])
    _fake(tmp_path, 100, utime=150 + table.clk_tck)
    (row,) = table.read([], groups={7})
    assert row["cpu_pct"] is not None and row["cpu_pct"] > 0


def test_a_reused_pid_is_read_at_once(tmp_path: Path) -> None:
    """A cold PID whose /proc directory is another one (a new process under the old number)
    is read on the sample it appears, not on the old one's turn."""
    _fake(tmp_path, 402, comm="oldjob", start=5000)
    table = probe.Procs(str(tmp_path))
    for _ in range(3):
        table.read([])
    assert "402" in table.cold
    (tmp_path / "new").mkdir()
    _fake(tmp_path / "new", 402, comm="newjob", start=9000)  # made while the old one exists
    shutil.rmtree(tmp_path / "402")
    (tmp_path / "new" / "402").rename(tmp_path / "402")
    table.turn = 402 % probe.COLD_EVERY + 1  # not the old entry's turn
    (row,) = table.read([])
    assert row["cmd"] == "newjob" and row["start_ticks"] == 9000


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
