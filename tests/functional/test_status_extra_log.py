"""An absent extra log beside a live, logging run of ours, end to end: a
real run launched by `dflash-tui launch` (a `sh` loop in a temp run root), the real probe, the
stand-in nvidia-smi playing the seed incident, `dflash-tui status --json --log ABSENT`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LOOP = "i=0; while true; do i=$((i+1)); echo step=$i loss=1.0; sleep 0.2; done"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_absent_extra_log_beside_a_logging_run_is_a_warning(fake_smi: Any, tmp_path: Path) -> None:
    root, absent = str(tmp_path / "runs"), str(tmp_path / "absent.log")
    launched = cli("launch", "--json", "--run-root", root, "--command", LOOP)
    assert launched.returncode == 0, launched.stderr
    pgid = json.loads(launched.stdout)["pgid"]
    try:
        deadline = time.monotonic() + 60
        while True:  # until the run's own log has lines: it is running and logging
            res = cli("status", "--json", "--run-root", root, "--log", absent)
            assert res.returncode == 0, res.stderr
            doc = json.loads(res.stdout)
            own = [lg for lg in doc["run"]["logs"] if lg["run_log"]]
            if doc["run"]["state"] == "running" and own and (own[0]["size"] or 0) > 0:
                break
            assert time.monotonic() < deadline, doc["run"]
            time.sleep(0.5)
        findings = {f["code"]: f for f in doc["findings"]}
        missing = findings["log-missing"]
        assert missing["severity"] == "warning", missing
        assert absent in missing["message"]
        assert "launch failed" not in missing["message"]
        assert "watched besides run" in missing["message"]
        # The seed's GPUs (busy-no-memory, idle): warnings; the summary says no more.
        assert findings["topology-mismatch"]["severity"] == "warning"
        assert not [f for f in doc["findings"] if f["severity"] == "error"], doc["findings"]
    finally:
        os.killpg(pgid, signal.SIGKILL)
