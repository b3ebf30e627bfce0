"""A tally of hostile inputs at the seams where records, probes and the command line meet.

Each fault is driven through the real ``dflash-tui`` command (a real program in the probe's
place, real record files, a real ``serve`` and HTTP client) of the tree whose ``dflash_tui``
the interpreter imports, so the same script tallies an old tree and a new one:

    PYTHONPATH=/path/to/paths-of-old-tree python3 tests/faults/seams_tally.py
    .venv/bin/python tests/faults/seams_tally.py

prints one Markdown table: per fault, whether it survived (no traceback, no hang), whether what
it said was true (``false``: a wrong or missing statement), raw terminal bytes that reached
stdout or stderr, crashes (a traceback or a hang) and the peak RSS of the command in MiB.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from hostile_probe import install, raw_in, shouting_probe  # noqa: E402
from support import live_group  # noqa: E402

from dflash_tui.app import scenes  # noqa: E402
from dflash_tui.core.base.config_record import RecordSettings  # noqa: E402
from dflash_tui.core.base.config_types import HostConfig  # noqa: E402
from dflash_tui.core.diagnosis.tracker import Tracker  # noqa: E402
from dflash_tui.core.record.recorder import Recorder  # noqa: E402
from dflash_tui.core.record.segments import GZIP, SegmentWriter  # noqa: E402

PEAK = (
    "import resource, subprocess, sys;"
    "r = subprocess.run(sys.argv[2:], capture_output=True, timeout=float(sys.argv[1]));"
    "sys.stderr.buffer.write(r.stderr); sys.stdout.buffer.write(r.stdout);"
    "print(); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


@dataclass
class Outcome:
    fault: str
    survived: bool
    false: int
    raw: int
    crash: bool
    peak_mib: float
    seconds: float


def dflash(args: list[str], env: dict[str, str] | None = None, timeout: float = 60.0
           ) -> tuple[int | None, bytes, bytes, float, float]:  # fmt: skip
    """rc (None: hung), stdout, stderr, peak RSS MiB, seconds."""
    cmd = [sys.executable, "-c", PEAK, str(timeout), sys.executable, "-m",
           "dflash_tui.cli.main", *args]  # fmt: skip
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout + 30,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, b"", b"", 0.0, time.monotonic() - t0
    body, _, last = res.stdout.rstrip(b"\n").rpartition(b"\n")
    if b"TimeoutExpired" in res.stderr:
        return None, body, res.stderr, 0.0, time.monotonic() - t0
    rc, peak = (int(x) for x in last.split())
    return rc, body, res.stderr, peak / 1024, time.monotonic() - t0


def outcome(fault: str, got: tuple[int | None, bytes, bytes, float, float], true: bool
            ) -> Outcome:  # fmt: skip
    rc, out, err, peak, secs = got
    crash = rc is None or b"Traceback" in err
    raw = len(raw_in(out)) + len(raw_in(err))
    return Outcome(fault, not crash, int(not true), raw, crash, peak, secs)


def record(root: Path, run_id: str, t0: float) -> Path:
    run = root / run_id
    run.mkdir(parents=True)
    host = HostConfig(run_root=str(root))
    from dataclasses import replace

    snaps = [replace(s, time=t0 + 5 * k, run=replace(s.run, id=run_id, dir=str(run)))
             for k, s in enumerate(scenes.healthy_run(samples=6)) if s.run]  # fmt: skip
    rec, tracker = Recorder(host, RecordSettings(segment_s=3600), "tally"), Tracker(host.topology)
    for s in snaps:
        rec.add(s, tracker.add(s))
    rec.close()
    return run


def bad_segment(run: Path, lines: list[bytes], trailing: bytes = b"") -> None:
    path = run / "record" / "seg-999999999999999-1.jsonl.gz"
    seg = SegmentWriter(path)
    for line in lines:
        seg.write(line)
    seg.close()
    with open(path, "ab") as f:
        f.write(trailing)


def replay_json(run: Path) -> tuple[tuple[int | None, bytes, bytes, float, float], dict]:  # type: ignore[type-arg]
    got = dflash(["status", "--replay", str(run), "--json"])
    try:
        doc = json.loads(got[1])
    except ValueError:
        doc = {}
    return got, doc


def f_string_snap(tmp: Path) -> Outcome:
    run = record(tmp, "r", 1.8e9)
    bad_segment(run, [json.dumps({"k": "s", "t": 1.8e9 + 99, "snap": "x"}).encode() + b"\n"])
    got, doc = replay_json(run)
    return outcome("record: a sample whose snap is a string", got,
                   doc.get("replay", {}).get("samples") == 6)  # fmt: skip


def f_deep(tmp: Path) -> Outcome:
    run = record(tmp, "r", 1.8e9)
    bad_segment(run, [b"[" * 100_000 + b"]" * 100_000 + b"\n"])
    got, doc = replay_json(run)
    return outcome("record: one line nested 100,000 deep", got,
                   doc.get("replay", {}).get("samples") == 6)  # fmt: skip


def f_trailing(tmp: Path) -> Outcome:
    run = record(tmp, "r", 1.8e9)
    path = next((run / "record").glob("seg-*"))
    with open(path, "ab") as f:
        f.write(b"GARBAGE" * 10)
    got, doc = replay_json(run)
    notes = " ".join(doc.get("replay", {}).get("notes", []))
    return outcome("record: garbage after a segment's end", got, "70 bytes" in notes)


def f_inflate(tmp: Path) -> Outcome:
    run = record(tmp, "r", 1.8e9)
    z = zlib.compressobj(9, zlib.DEFLATED, GZIP)
    with open(run / "record" / "seg-999999999999999-1.jsonl.gz", "wb") as f:
        f.write(z.compress(b'{"k":"s","snap":{"x":"'))
        for _ in range(400):
            f.write(z.compress(b"a" * (1 << 20)))
        f.write(z.compress(b'"}}\n') + z.flush())
    got, doc = replay_json(run)
    return outcome("record: a 408 KB segment inflating to a 400 MiB line", got,
                   doc.get("replay", {}).get("samples") == 6)  # fmt: skip


def f_replay_pipe(tmp: Path) -> Outcome:
    run = record(tmp, "r", 1.8e9)
    got = dflash(["replay", str(run)], timeout=20)
    return outcome("replay without a terminal", got,
                   got[0] == 2 and b"status --replay" in got[2])  # fmt: skip


def f_replay_root(tmp: Path) -> Outcome:
    record(tmp, "r1", 1.8e9)
    record(tmp, "r2", 1.8e9 + 100)
    got, doc = replay_json(tmp)
    return outcome("replay RUN_ROOT: every run's record", got,
                   doc.get("replay", {}).get("samples") == 12)  # fmt: skip


def env_with(python: str) -> dict[str, str]:
    return {**os.environ, "DFLASH_TUI_PYTHON": python}


def f_hostile_table(tmp: Path) -> Outcome:
    got = dflash(["status", "--run-root", str(tmp)], env_with(install(tmp / "p")))
    return outcome("probe: escapes in every string (status table)", got, b"PWNED" in got[1])


def f_hostile_json(tmp: Path) -> Outcome:
    got = dflash(["status", "--json", "--run-root", str(tmp)], env_with(install(tmp / "p")))
    try:
        ok = json.loads(got[1])["run"]["id"].startswith("20251202")
    except (ValueError, KeyError, TypeError):
        ok = False
    return outcome("probe: escapes in every string (status --json)", got, ok)


def f_big_line(tmp: Path) -> Outcome:
    py = shouting_probe(tmp / "p", "'{\"x\": \"' + 'a' * 70_000_000 + '\"}'")
    got = dflash(["status", "--json", "--run-root", str(tmp)], env_with(py), timeout=120)
    return outcome("probe: a 70 MB line (status --json)", got, b"over the cap" in got[1])


def f_rows(tmp: Path) -> Outcome:
    line = ("json.dumps({'time': time.time(), 'procs': "
            "[{'pid': i + 10, 'ppid': 1, 'cmd': 'x'} for i in range(25000)]})")  # fmt: skip
    got = dflash(
        ["status", "--json", "--run-root", str(tmp)], env_with(shouting_probe(tmp / "p", line))
    )
    return outcome("probe: 25,000 process rows", got, b"over the cap" in got[1])


async def _origin(url: str) -> int:
    import aiohttp

    base, token = url.split("/?token=")
    async with aiohttp.ClientSession() as s:
        try:
            async with s.ws_connect(base.replace("http", "ws") + f"/ws/{token}",
                                    origin="http://evil.example") as ws:  # fmt: skip
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def f_origin(tmp: Path) -> Outcome:
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "serve", "--run-root", str(tmp),
         "--bind", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = re.search(rb"http://\S+\?token=\S+", proc.stdout.readline())
        status = asyncio.run(_origin(url.group().decode())) if url else 0
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
    return Outcome("serve: a websocket from another Origin", True, int(status != 403), 0, False,
                   0.0, 0.0)  # fmt: skip


def f_newline_name(tmp: Path) -> Outcome:
    job = (f"{sys.executable} -c \"import signal, time; signal.signal(signal.SIGTERM, "
           "signal.SIG_IGN); open('/proc/self/comm', 'w').write('sleep' + chr(10) + 'glued'); "
           "time.sleep(100)\"")  # fmt: skip
    root = str(tmp / "runs")
    launched = dflash(["launch", "--json", "--run-root", root, "--command", job,
                       "--start-window", "1"])  # fmt: skip
    pgid = json.loads(launched[1])["pgid"]
    try:
        got = dflash(["kill", "--run-root", root, "--grace", "2"])
        time.sleep(0.5)
        outlived = live_group(pgid)
    finally:
        try:
            os.killpg(pgid, 9)
        except ProcessLookupError:
            pass
    return outcome("kill: a member that names itself with a newline", got, outlived == [])


FAULTS: list[Callable[[Path], Outcome]] = [
    f_string_snap, f_deep, f_trailing, f_inflate, f_replay_pipe, f_replay_root,
    f_hostile_table, f_hostile_json, f_big_line, f_rows, f_origin, f_newline_name,
]  # fmt: skip


def main() -> None:
    rows = []
    for fault in FAULTS:
        with tempfile.TemporaryDirectory() as d:
            rows.append(fault(Path(d)))
    print("| fault | survived | false | raw bytes | crash | peak MiB | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r.fault} | {int(r.survived)} | {r.false} | {r.raw} | {int(r.crash)} | "
              f"{r.peak_mib:.0f} | {r.seconds:.1f} |")  # fmt: skip
    tot = (sum(r.survived for r in rows), sum(r.false for r in rows), sum(r.raw for r in rows),
           sum(r.crash for r in rows), max(r.peak_mib for r in rows))  # fmt: skip
    print(f"| **total ({len(rows)} tried)** | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} | "
          f"{tot[4]:.0f} (max) | |")  # fmt: skip


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
