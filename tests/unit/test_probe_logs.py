"""Log tails: appended text only, partial lines held, truncation, rotation, absence, caps."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fakes.proberun import ProbeStream, log_lines, run_probe

from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.probe import main as probe
from dflash_tui.core.probe import tail as probe_tail
from dflash_tui.core.probe.main import TailReader


def tail(path: Path, first: bool = False) -> TailReader:
    return TailReader(str(path), tail_first=first)


def sample(t: TailReader, tail_bytes: int = 65536, max_lines: int = 5000) -> dict:
    out = t.sample(tail_bytes, max_lines)
    json.dumps(out)  # always serialisable
    return out


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_first_sample_sends_the_tail_cut_to_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"".join(b"line-%03d\n" % i for i in range(10)))  # 9 bytes a line
    out = sample(tail(log, first=True), tail_bytes=30)
    assert out["lines"] == ["line-007", "line-008", "line-009"]
    assert out["skipped_bytes"] == 0 and not out["truncated"]
    assert out["exists"] and out["size"] == 90 and out["mtime"] == log.stat().st_mtime
    # a tail that starts exactly at a line start keeps that line
    assert sample(tail(log, first=True), tail_bytes=27)["lines"] == [
        "line-007",
        "line-008",
        "line-009",
    ]
    assert sample(tail(log, first=True), tail_bytes=1000)["lines"][0] == "line-000"


def test_appended_text_only_and_partial_lines_held(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"old\n")
    t = tail(log, first=True)
    assert sample(t)["lines"] == ["old"]
    assert sample(t)["lines"] == []
    append(log, b"one\ntw")
    assert sample(t)["lines"] == ["one"]
    append(log, b"o")
    assert sample(t)["lines"] == []
    append(log, b"\nthree\r\n")
    assert sample(t)["lines"] == ["two", "three"]  # CRLF: the \r goes too


def test_a_giant_partial_line_is_cut_not_held(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"")
    t = tail(log)
    sample(t)
    append(log, b"x" * (probe_tail.LINE_CAP + 10))
    out = sample(t)
    assert out["lines"] == ["x" * probe_tail.LINE_CAP] and out["gaps"] == []
    append(log, b"y\nnext\n")  # the giant line ends: its cut rest is counted, then a gap note
    out = sample(t)
    assert out["lines"] == ["next"] and out["skipped_bytes"] == 11
    assert out["gaps"] == [
        [0, f"a line was cut after {probe_tail.LINE_CAP:,} bytes: 11 more of it not shown"]
    ]


def test_truncation_restarts_at_zero(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"a long first line\nsecond\nunfinished")
    t = tail(log, first=True)
    assert sample(t)["lines"] == ["a long first line", "second"]
    log.write_bytes(b"new\n")  # truncated and rewritten, shorter than before
    out = sample(t)
    assert out["truncated"] is True
    assert out["lines"] == ["unfinished", "new"]  # the old file's last words are not lost
    out = sample(t)
    assert out["truncated"] is False and out["lines"] == []


def test_rotation_restarts_at_zero(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"before\n")
    t = tail(log, first=True)
    assert sample(t)["lines"] == ["before"]
    log.rename(tmp_path / "a.log.1")
    log.write_bytes(b"after rotation, a longer file than the old one\nmore\n")
    out = sample(t)
    assert out["truncated"] is True
    assert out["lines"] == ["after rotation, a longer file than the old one", "more"]


def test_missing_file_is_a_state_not_an_error(tmp_path: Path) -> None:
    log = tmp_path / "not yet.log"
    t = tail(log, first=True)
    out = sample(t)
    assert out == {
        "path": str(log),
        "exists": False,
        "size": None,
        "mtime": None,
        "lines": [],
        "truncated": False,
        "skipped_bytes": 0,
        "error": None,
        "is_run_log": False,
        "gaps": [],
        "resume": None,
        "followed": None,
    }
    log.write_bytes(b"".join(b"%d\n" % i for i in range(100)))
    out = sample(t, tail_bytes=10)
    assert out["exists"] and len(out["lines"]) == 100  # it appeared: all of it is new
    assert out["truncated"] is False
    log.unlink()
    assert sample(t)["exists"] is False
    log.write_bytes(b"reborn\n")
    out = sample(t)
    assert out["truncated"] is True and out["lines"] == ["reborn"]


def test_flood_is_capped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_tail, "LOG_CAP", 1000)  # where TailReader reads it
    log = tmp_path / "a.log"
    log.write_bytes(b"")
    t = tail(log)
    sample(t)
    chunk = b"".join(b"%07d\n" % i for i in range(500))  # 4000 bytes, 8 a line
    append(log, chunk)
    out = sample(t)
    sent = sum(len(x) + 1 for x in out["lines"])
    assert out["skipped_bytes"] + sent == len(chunk)
    assert out["lines"][-1] == "0000499" and sent <= 1000
    append(log, b"next\n")
    assert sample(t)["lines"] == ["next"]


def test_max_lines_keeps_the_newest(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"".join(b"%d\n" % i for i in range(10)))
    out = sample(tail(log), max_lines=3)
    assert out["lines"] == ["7", "8", "9"]
    assert out["skipped_bytes"] == 7 * 2
    out = sample(tail(log), max_lines=0)
    assert out["lines"] == [] and out["skipped_bytes"] == 10 * 2


def test_hostile_bytes(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    data = (
        b"bad utf8 \xff\xfe\xc3(\n"
        b"nul \x00 inside\n"
        b"\x1b[31mred\x1b[0m \x1b]0;title\x07\n"
        b"progress 10%\rprogress 90%\n"
        b"\xe2\x80\xa8 line separator \xf0\x9f\x92\xa5\n"
        b'{"json": "lookalike"}\n'
    )
    log.write_bytes(data)
    out = sample(tail(log))
    assert out["lines"][0] == "bad utf8 \ufffd\ufffd\ufffd("
    assert out["lines"][1] == "nul \x00 inside"
    assert out["lines"][3] == "progress 10%\rprogress 90%"
    assert out["lines"][4] == "\u2028 line separator \U0001f4a5"
    line = json.dumps(out)
    assert "\n" not in line and "\u2028" not in line  # one JSON line, whatever the log holds
    assert json.loads(line)["lines"] == out["lines"]


def test_unreadable_and_special_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = sample(tail(fifo))  # must not block
    assert out["exists"] and out["error"] == "not a regular file"
    out = sample(tail(tmp_path))
    assert out["error"] == "not a regular file"
    secret = tmp_path / "secret.log"
    secret.write_text("x\n")
    real_open = os.open

    def deny(path, *a, **kw):  # root reads anything: simulate a permission error
        if str(path) == str(secret):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(probe.os, "open", deny)
    out = sample(tail(secret))
    assert out["exists"] is True and out["error"] == "PermissionError: Permission denied"


def test_paths_with_spaces_quotes_and_dollars_via_argv(tmp_path: Path) -> None:
    log = tmp_path / 'it\'s a "log" $HOME `x`; rm -rf.txt'
    log.write_text("safe\n")
    home_log = tmp_path / "home.log"
    home_log.write_text("tilde\n")
    env = dict(os.environ, HOME=str(tmp_path))
    out = run_probe("--log", str(log), "--log=~/home.log", "--no-nvml", env=env)
    by_path = {lg["path"]: lg for lg in out["logs"]}
    assert by_path[str(log)]["lines"] == ["safe"]
    assert by_path["~/home.log"]["lines"] == ["tilde"]  # reported as given, read expanded
    assert all(lg["exists"] and lg["error"] is None for lg in out["logs"])
    assert not any(lg["is_run_log"] for lg in out["logs"])
    assert Snapshot.from_dict(out).logs[0].path == str(log)


def test_live_stream_follows_appends_partials_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "live log.txt"
    log.write_bytes(b"history\n")
    path = str(log)
    with ProbeStream("--no-nvml", "--log", path, interval=0.1) as s:
        assert log_lines([s.next()], path) == ["history"]
        append(log, b"step=1\nste")
        seen = s.until(lambda d: "step=1" in log_lines([d], path))
        append(log, b"p=2\n")
        seen += s.until(lambda d: "step=2" in log_lines([d], path))
        assert log_lines(seen, path) == ["step=1", "step=2"]
        log.write_bytes(b"fresh\n")
        seen = s.until(lambda d: d["logs"][0]["truncated"])
        if "fresh" not in log_lines(seen, path):  # sampled between the truncation and the write
            seen += s.until(lambda d: "fresh" in log_lines([d], path))
        assert log_lines(seen, path) == ["fresh"]
        log.unlink()
        s.until(lambda d: not d["logs"][0]["exists"])


def test_a_leaders_stdout_that_is_not_this_log_is_not_followed(tmp_path: Path) -> None:
    """Only the file the tail already followed is followed through the job's stdout."""
    log, other = tmp_path / "output.log", tmp_path / "elsewhere.log"
    log.write_text("ours\n")
    with open(other, "wb") as out:
        job = subprocess.Popen(["sleep", "30"], stdout=out)
    try:
        ticks = int(Path(f"/proc/{job.pid}/stat").read_text().rpartition(")")[2].split()[19])
        t = tail(log)
        res = t.sample(65536, 5000, True, (job.pid, ticks))
        assert res["lines"] == ["ours"] and res["followed"] is None
        log.rename(tmp_path / "moved.log")  # not the job's stdout: no reason to follow it
        other.write_text("not ours\n")
        res = t.sample(65536, 5000, True, (job.pid, ticks))
        assert res["followed"] is None and res["exists"] is False and res["lines"] == []
    finally:
        job.kill()
        job.wait()
