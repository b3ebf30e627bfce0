"""``kill``'s progress is one line per report on stderr, whatever the job named its
processes: a member whose name carries a newline (and ignores SIGTERM, so it is listed as it
remains) is shown escaped, never split onto a line of its own; stdout holds the result only.
And such a member is still seen as one (control reads its whole /proc stat), so the kill
escalates and it does not outlive it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from support import live_group

ROOT = Path(__file__).resolve().parents[2]
# A member that ignores SIGTERM and names itself "sleep<newline>glued" (its comm).
JOB = (
    f'{sys.executable} -c "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
    "open('/proc/self/comm', 'w').write('sleep' + chr(10) + 'glued'); time.sleep(100)\""
)


def dflash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


def test_each_kill_progress_report_is_one_line_on_stderr(tmp_path: Path) -> None:
    root = str(tmp_path / "runs")
    run = json.loads(dflash("launch", "--json", "--run-root", root, "--command", JOB,
                            "--start-window", "1").stdout)  # fmt: skip
    assert run["ok"], run
    try:
        res = dflash("kill", "--run-root", root, "--grace", "2")
        assert live_group(run["pgid"]) == []  # nothing of the group outlived the kill
    finally:
        try:
            os.killpg(run["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    progress = res.stderr.splitlines()
    assert any("sleep glued (S)" in line for line in progress), res.stderr  # seen, one line
    assert all(line.startswith("[") for line in progress), res.stderr
    assert res.stderr.endswith("\n")
    assert not any(line.startswith("[") for line in res.stdout.splitlines()), res.stdout
    assert "SIGKILL" in res.stdout, res.stdout  # escalated: the member ignored SIGTERM
