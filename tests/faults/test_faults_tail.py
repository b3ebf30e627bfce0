"""Log tails under real faults: every line a file gets is shown exactly once,
or a gap in the sample says how many were not.

Each test makes the fault for real: a writer process rotating its log by rename, a truncate
followed by regrowth between two samples, a launched job whose output.log is moved, a 10 MB
line, a flood, and a real SSH outage on the loopback sshd while the job keeps writing. The
probe runs as the transports run it (``python3 -`` with its source on stdin).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.proberun import ProbeStream, log_lines
from sshd_fixtures import ALIAS, cli, local_view, make_sshd

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.link.feed import Feed
from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.ssh_connect import SshSettings

NOT_SHOWN = re.compile(r"^([\d,]+) lines not shown")
LINE_CAP = 16384  # the probe's cut of a giant line (tui/core/probe/tail.py, docs/internals.md)


def gaps(samples: list[dict[str, Any]], path: str) -> list[str]:
    return [g[1] for s in samples for lg in s["logs"] if lg["path"] == path for g in lg["gaps"]]


def lines_not_shown(texts: list[str]) -> int:
    return sum(int(m.group(1).replace(",", "")) for t in texts if (m := NOT_SHOWN.match(t)))


def numbered(n: int, start: int = 0, width: int = 0) -> list[str]:
    return [f"n={i:06d}" + "." * width for i in range(start, start + n)]


def writer(script: str, *args: str) -> subprocess.Popen[bytes]:
    """A separate process that writes the log, as a job does."""
    return subprocess.Popen([sys.executable, "-c", script, *args])


ROTATING = """
import logging, logging.handlers, sys, time
h = logging.handlers.RotatingFileHandler(sys.argv[1], maxBytes=6000, backupCount=500)
log = logging.getLogger("w"); log.addHandler(h); log.setLevel(logging.INFO)
for i in range(int(sys.argv[2])):
    log.info("n=%06d %s", i, "." * 60)
    time.sleep(0.004)
"""


def test_rotation_by_rename_loses_nothing(tmp_path: Path) -> None:
    """A RotatingFileHandler renames its log every ~6 KB (~0.4 s): the lines the old file got
    after the last sample are read from it before the new file is started."""
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    n = 1000
    with ProbeStream("--no-nvml", f"--log={log}", interval=0.1) as s:
        seen = [s.next()]
        w = writer(ROTATING, str(log), str(n))
        try:
            seen += s.until(lambda d: w.poll() is not None, timeout=60)
            size = log.stat().st_size
            seen += s.until(lambda d: d["logs"][0]["size"] == size, timeout=20)
            seen.append(s.next())
        finally:
            w.kill()
            w.wait()
    assert len(list(tmp_path.glob("train.log.*"))) >= 10  # it did rotate, many times
    shown = log_lines(seen, str(log))
    assert shown == [f"n={i:06d} {'.' * 60}" for i in range(n)]  # 0 lost, 0 doubled, in order
    assert all("rotated" in g for g in gaps(seen, str(log)))


def test_truncate_then_regrowth_before_the_next_sample(tmp_path: Path) -> None:
    """Truncated and rewritten past the old offset within one interval: the size grew, the
    inode is the same, yet every new line is shown and the truncation is marked."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"old {i:04d}\n" for i in range(200)))
    new = numbered(400, width=10)
    with ProbeStream("--no-nvml", f"--log={log}", interval=0.5) as s:
        first = s.next()
        assert log_lines([first], str(log))[-1] == "old 0199"
        subprocess.run(  # another process truncates and rewrites it (a `>` redirect)
            ["sh", "-c", 'printf "%s\\n" "$@" >"$0"', str(log), *new], check=True
        )
        seen = s.until(lambda d: d["logs"][0]["truncated"], timeout=10)
        if log_lines(seen, str(log)) != new:  # sampled between the truncate and the write
            seen += s.until(lambda d: new[-1] in log_lines([d], str(log)), timeout=10)
    assert log_lines(seen, str(log)) == new
    assert any("truncated" in g for g in gaps(seen, str(log)))


JOB = 'i=0; while [ $i -lt 150 ]; do printf "n=%06d\\n" $i; i=$((i+1)); sleep 0.03; done'


def test_moved_run_log_is_followed_through_the_jobs_stdout(tmp_path: Path) -> None:
    """The job keeps writing its output.log after it is moved away: the tail follows the
    job's open file (/proc/PID/fd/1) and says where it went."""
    root = tmp_path / "runs"
    res = cli("launch", "--json", "--run-root", str(root), "--command", JOB, "--start-window", "1")
    run = json.loads(res.stdout)
    assert run["ok"], res.stdout + res.stderr
    log = Path(run["dir"]) / "output.log"
    moved = tmp_path / "elsewhere" / "kept.log"
    moved.parent.mkdir()
    try:
        with ProbeStream("--no-nvml", f"--run-root={root}", interval=0.15) as s:
            seen = s.until(lambda d: len(log_lines([d], str(log))) > 0, timeout=20)
            os.rename(log, moved)
            seen += s.until(lambda d: d["run"]["exit_code"] is not None, timeout=30)
            seen += [s.next(), s.next()]
    finally:
        try:
            os.killpg(run["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert log_lines(seen, str(log)) == numbered(150)
    followed = [lg["followed"] for d in seen for lg in d["logs"] if lg["followed"]]
    assert followed and followed[0].endswith("kept.log")


def test_a_10_mb_line_is_cut_and_its_neighbours_kept(tmp_path: Path) -> None:
    """14 lines, one 10 MB line and 3 more in one interval: all 17 are shown, the giant one
    by its head, with a note of how much of it was cut."""
    log = tmp_path / "train.log"
    log.write_bytes(b"start\n")
    before, after = numbered(14), numbered(3, start=100)
    giant = b"x" * (10 * 1024 * 1024)
    with ProbeStream("--no-nvml", f"--log={log}", interval=0.5) as s:
        seen = [s.next()]
        with open(log, "ab") as f:
            f.write(("\n".join(before) + "\n").encode() + giant + b"\n")
            f.write(("\n".join(after) + "\n").encode())
        seen += s.until(lambda d: after[-1] in log_lines([d], str(log)), timeout=20)
    shown = log_lines(seen, str(log))
    head = "x" * LINE_CAP
    assert shown == ["start", *before, head, *after]
    cut = len(giant) - LINE_CAP
    assert f"a line was cut after {LINE_CAP:,} bytes: {cut:,} more of it not shown" in (
        gaps(seen, str(log))
    )


def test_a_flood_is_shown_newest_first_with_the_rest_counted(tmp_path: Path) -> None:
    """20,000 lines in one interval, more than a sample carries: what is not shown is counted
    in a gap, so shown + not shown = written."""
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    flood = numbered(20000)
    with ProbeStream("--no-nvml", f"--log={log}", interval=0.5) as s:
        s.next()
        log.write_text("\n".join(flood) + "\n")
        seen = s.until(lambda d: flood[-1] in log_lines([d], str(log)), timeout=20)
    shown = log_lines(seen, str(log))
    assert shown == flood[-len(shown) :] and len(shown) == 5000
    assert lines_not_shown(gaps(seen, str(log))) + len(shown) == len(flood)


# ---- a real SSH outage: the loopback sshd stopped while the job keeps writing -----------------

STEADY = """
import sys, time
with open(sys.argv[1], "a") as f:
    for i in range(int(sys.argv[2])):
        f.write("n=%06d %s\\n" % (i, "." * 90)); f.flush()
        time.sleep(0.004)
"""


@pytest.mark.ssh
async def test_ssh_outage_resumes_the_tail_without_duplicates_or_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 s without sshd while ~100 KB are written: the reconnected probe resumes at the byte
    where the last sample stopped, so no line is shown twice and none is missing."""
    server = make_sshd(tmp_path / "sshd")  # its own server: this test stops it
    server.start()
    local_view(server, monkeypatch)
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    n = 2500
    host = HostConfig(address=ALIAS, logs=(str(log),), run_root=str(tmp_path / "runs"))
    t = SshTransport(ALIAS, settings=SshSettings(keepalive_interval=1, connect_timeout=3))
    feed = Feed(t, host, interval=0.2, max_backoff=1.0)
    events = feed.events()
    snaps: list[Snapshot] = []
    downs = 0
    w = None
    try:

        async def collect(until: float) -> None:
            nonlocal downs
            while time.monotonic() < until:
                ev = await asyncio.wait_for(anext(events), 30)
                if isinstance(ev, Snapshot):
                    snaps.append(ev)
                else:
                    downs += 1

        await collect(time.monotonic() + 0.5)
        w = writer(STEADY, str(log), str(n))
        await collect(time.monotonic() + 2.0)
        server.stop()
        await asyncio.sleep(3.0)
        server.start()
        while w.poll() is None or not snaps or snaps[-1].logs[0].size != log.stat().st_size:
            await collect(time.monotonic() + 0.5)
    finally:
        if w is not None:
            w.kill()
            w.wait()
        await events.aclose()
        await t.close()
        server.stop()
    assert downs >= 1 and t.link.connects >= 2  # the link was really lost and opened again
    shown = [ln for s in snaps for lg in s.logs for ln in lg.lines]
    expected = [f"n={i:06d} {'.' * 90}" for i in range(n)]
    doubled = len(shown) - len(set(shown))
    missing = len(set(expected) - set(shown))
    assert (doubled, missing) == (0, 0)
    assert shown == expected
    assert not [g for s in snaps for lg in s.logs for g in lg.gaps]
