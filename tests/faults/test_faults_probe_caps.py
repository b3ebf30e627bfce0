"""A probe's output is capped as it is read: a line over the cap (32 MiB) is refused with its
size, never held or parsed whole; rows past a sample's cap are skipped and said. A real
program stands in the probe's place (tests/hostile_probe.py) and the real command or the real
feed and transport read it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hostile_probe import shouting_probe, with_peak_rss

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.snapshot import PROBE_LINE_MAX, ROWS_MAX, Snapshot
from dflash_tui.core.link.feed import Feed, Malformed
from dflash_tui.core.link.transport import LocalTransport, oversize_of

ROOT = Path(__file__).resolve().parents[2]
STATUS = [sys.executable, "-m", "dflash_tui.cli.main", "status"]


def test_a_70_mb_probe_line_is_refused_with_its_size_and_memory_stays_low(
    tmp_path: Path,
) -> None:
    python = shouting_probe(tmp_path / "p", "'{\"x\": \"' + 'a' * 70_000_000 + '\"}'")
    env = {**os.environ, "DFLASH_TUI_PYTHON": python}
    rc, out, err, peak = with_peak_rss(
        [*STATUS, "--run-root", str(tmp_path), "--json"], env=env, cwd=ROOT, timeout=120
    )
    doc = json.loads(out)
    assert rc == 1, err
    refused = f"is over the cap of {PROBE_LINE_MAX:,}: refused"
    assert refused in doc["error"]
    assert [f["code"] for f in doc["findings"]] == ["host-unreachable"]
    assert "70,000,0" in doc["error"]  # the figure: the line's size
    assert peak < 250 * 1024, f"status peaked at {peak / 1024:.0f} MiB"


async def test_the_live_feed_refuses_an_over_cap_line_and_reads_the_next(
    tmp_path: Path,
) -> None:
    python = shouting_probe(tmp_path / "p", "'x' * (40 << 20)")
    feed = Feed(LocalTransport(python=python), HostConfig(run_root=str(tmp_path)))
    events = feed.events()
    try:
        first = await anext(events)
        second = await anext(events)
    finally:
        await events.aclose()
    assert isinstance(first, Malformed)
    assert first.error == (
        f"a probe line of {40 << 20:,} bytes is over the cap of {PROBE_LINE_MAX:,}: refused"
    )
    assert isinstance(second, Snapshot) and second.host == "after"


def test_process_rows_past_the_cap_are_skipped_and_said(tmp_path: Path) -> None:
    n = ROWS_MAX["procs"] + 5000
    line = (
        "json.dumps({'time': time.time(), 'procs': "
        f"[{{'pid': i + 10, 'ppid': 1, 'cmd': 'x'}} for i in range({n})]}})"
    )
    python = shouting_probe(tmp_path / "p", line)
    env = {**os.environ, "DFLASH_TUI_PYTHON": python}
    _, out, _, _ = with_peak_rss(
        [*STATUS, "--run-root", str(tmp_path), "--json"], env=env, cwd=ROOT, timeout=120
    )
    doc = json.loads(out)
    degraded = [f["message"] for f in doc["findings"] if f["code"] == "telemetry-degraded"]
    assert degraded, doc["findings"]
    cap = ROWS_MAX["procs"]
    assert f"{n:,} procs rows, over the cap of {cap:,}: the first {cap:,} kept" in degraded[0]


async def test_lines_under_the_cap_arrive_whole_across_reads(tmp_path: Path) -> None:
    """A 5 MiB line spans many reads; a last line without its newline still arrives."""
    script = tmp_path / "lines.py"
    script.write_text(
        "import sys\n"
        "sys.stdout.write('a' * (5 << 20) + '\\n' + 'b\\n' + 'x' * (40 << 20) + '\\nlast')\n"
    )
    transport = LocalTransport()
    got = [line async for line in transport.stream(f"{sys.executable} {script}")]
    assert [len(x) for x in got] == [5 << 20, 1, len(got[2]), 4]
    assert got[0] == "a" * (5 << 20) and got[1] == "b" and got[3] == "last"
    assert oversize_of(got[2]) == 40 << 20  # the refused line's stand-in: its size alone
