"""A run root on a full filesystem (a real 512 KiB tmpfs, filled with a file): the supervisor
stays alive and says so. Its heartbeat and record go on (written in place), the record follows
the run to FATAL, no temporary file is left, its log says "No space left on device" once (and
once that it can write again), never "link down"; ``status`` calls it fresh and says it cannot
write; the job that failed on the full disk reads as exited 1, not killed.

Mounting needs root: without it the test is skipped with the reason, except under CI=1 where
it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervise_util import cleanup, cli, config, record, run_dirs, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs of its own, unmounted after the test."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
                         capture_output=True, text=True)  # fmt: skip
    if res.returncode != 0:
        why = f"cannot mount a tmpfs here: {res.stderr.strip() or res.returncode}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield mnt
    finally:
        cleanup(mnt / "runs")
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path) -> Path:
    """Fill the filesystem to the last block; the filler's path."""
    filler = mnt / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)
    assert os.statvfs(mnt).f_bavail == 0
    return filler


def test_a_full_run_root_leaves_the_supervisor_alive_and_truthful(
    disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, flag = disk / "runs", tmp_path / "die"
    log = tmp_path / "supervisor.log"  # beside the full disk, so that every line is kept
    monkeypatch.setenv("DFLASH_SUPERVISE_LOG", str(log))
    job = f"while [ ! -e {flag} ]; do sleep 0.1; done; exit 1"
    cfg = config(tmp_path / "cfg.toml", "retries = 1\nbackoff_s = 0.2\nmax_backoff_s = 0.5")
    opts = ("--config", str(cfg), "--run-root", str(root), "--command", job,
            "--interval", "0.5", "--start-window", "0.5")  # fmt: skip
    res = cli("supervise", *opts, "--auto-restart", "--detach")
    assert res.returncode == 0, res.stderr
    assert cli("launch", *opts).returncode == 0
    (run,) = run_dirs(root)
    wait_for(lambda: record(root).get("run", {}).get("state") == "running", 20, "running")
    sup = record(root)["pid"]
    # Past status's start window: an end then reads as an exit, not a failed launch.
    time.sleep(max(0.0, 4.0 - (time.time() - float((run / "started_at").read_text()))))
    filler = fill(disk)
    flag.touch()  # the job ends now, exit 1, on the full disk; its restart cannot launch
    wait_for(
        lambda: (record(root).get("last_decision") or {}).get("action") == "fatal",
        30,
        "FATAL on record",
    )
    time.sleep(2.0)  # a few beats on the full disk
    # (written in place, a record can be read half-new for an instant: read a whole one)
    rec = wait_for(lambda: record(root) or None, 5, "a whole record")
    assert rec["pid"] == sup and time.time() - rec["heartbeat_at"] < 5.0, rec  # still beating
    assert "No space left on device" in (rec["write_error"] or ""), rec
    assert rec["run"]["state"] != "running", rec["run"]
    assert not [p.name for p in root.iterdir() if ".tmp" in p.name]  # no temporary file left
    out = cli("status", "--run-root", str(root)).stdout
    # the line as one (the table wraps it at its width)
    line = " ".join(out.split()).partition("supervisor: ")[2].partition(" machine: ")[0]
    assert "fresh" in line and "STALE" not in line, line
    assert "cannot write its files: No space left on device" in line and "FATAL" in line, line
    doc = json.loads(cli("status", "--json", "--run-root", str(root)).stdout)
    assert doc["run"]["id"] == run.name, doc["run"]  # the restart could not make a run
    assert doc["run"]["state"] == "exited" and doc["run"]["exit_code"] == 1, doc["run"]
    said = [f["message"] for f in doc["findings"] if "No space left on device" in f["message"]]
    assert said, doc["findings"]  # the cause, beside the exit
    text = log.read_text()
    assert text.count("cannot write the supervisor record") == 1, text
    assert text.count("No space left on device") >= 1 and "link to" not in text, text
    filler.unlink()  # room again
    wait_for(lambda: record(root).get("write_error") is None, 10, "the record written whole")
    assert log.read_text().count("is written again") == 1
