"""dflash-train as one job of two processes under real torchrun (CPU, gloo).

Each test starts ``python -m torch.distributed.run --standalone --nproc-per-node 2`` with the
tiny preset (1 target + 2 drafter workers a rank, few steps): the job trains as one (one event
stream, ``step=`` lines once, equal replica checksums on both ranks, the loss falling), a fault
in rank 1 ends both, SIGTERM to the job stops both after the same step and ``--resume auto``
continues from it with both ranks, and a weight that drifts on one rank ends the job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dflash_train.events import read_events

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
# A run takes ~15 s on 2 idle cores (3 interpreters importing torch); the limit catches a hang.
JOB_LIMIT_S = 150
DIST_TIMEOUT = "30"
STEP = re.compile(r"^step=(\d+) loss=(\d+\.\d{4}) ")
STOPPED = re.compile(r"^(\[rank 1\] )?dflash-train: stopped by signal 15 at step (\d+)$")
pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFLASH_", "TORCHELASTIC"))}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **extra}


def _cmd(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", "2", "--max-restarts", "0",
            "-m", "dflash_train.train", "--preset", "tiny", "--device", "cpu",
            "--target-workers", "1", "--drafter-workers", "2", "--threads", "1",
            "--eval-batches", "0", "--gen-samples", "48", "--dist-timeout", DIST_TIMEOUT,
            "--out-dir", str(out), *args]  # fmt: skip


def _job(out: Path, *args: str, **env: str) -> tuple[int, str, float]:
    t0 = time.monotonic()
    res = subprocess.run(
        _cmd(out, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=_env(**env), timeout=JOB_LIMIT_S, start_new_session=True,
    )  # fmt: skip
    return res.returncode, res.stdout, time.monotonic() - t0


def _steps(log: str) -> list[int]:
    return [int(m.group(1)) for ln in log.splitlines() if (m := STEP.match(ln))]


def _ranks_gone(events: list[dict[str, Any]]) -> None:
    """Both workers (pids from rank 0's ``distributed`` event) have exited: no orphan."""
    ranks = next(e for e in events if e["event"] == "distributed")["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    for r in ranks:
        with pytest.raises(ProcessLookupError):
            os.kill(r["pid"], 0)


def _checksums(events: list[dict[str, Any]]) -> dict[int, list[list[float]]]:
    return {e["step"]: e["ranks"] for e in events if e["event"] == "replica_checksum"}


def test_two_ranks_train_as_one_job(tmp_path: Path) -> None:
    code, log, took = _job(tmp_path, "--steps", "12", "--checksum-every", "3")
    assert code == 0, log[-4000:]
    assert took < JOB_LIMIT_S
    assert _steps(log) == list(range(1, 13))  # once per step: rank 1 writes none
    assert "[rank 1] dflash-train starting pid=" in log
    assert not any(ln.startswith("[rank 1] step=") for ln in log.splitlines())
    assert "global batch 16 sequences a step (4 x 2 replicas x 1 accumulated x 2 processes)" in log
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_00000012.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints", "events.jsonl"]
    events = read_events(tmp_path / "events.jsonl")
    kinds = [e["event"] for e in events]
    assert kinds.count("started") == 1 and kinds.count("exit") == 1  # rank 0's stream only
    assert kinds.count("step") == 12 and events[-1]["code"] == 0
    dist = next(e for e in events if e["event"] == "distributed")
    assert (dist["world"], dist["backend"], dist["global_batch"]) == (2, "gloo", 16)
    sums = _checksums(events)
    assert sorted(sums) == [0, 3, 6, 9, 12]  # the start (after the broadcast), every 3, the end
    for step, rows in sums.items():
        assert len(rows) == 2 and all(len(r) == 2 for r in rows), rows
        assert len({v for r in rows for v in r}) == 1, (step, rows)  # 4 replicas, one value
    assert sums[0][0][0] != sums[12][0][0]  # the weights did move
    assert all(e["equal"] for e in events if e["event"] == "replica_checksum")
    losses = [e["loss"] for e in events if e["event"] == "step"]
    assert sum(losses[-4:]) < sum(losses[:4]) - 0.1, losses
    assert len(next(e for e in events if e["event"] == "step")["drafter_tok_s"]) == 4
    _ranks_gone(events)


def test_a_fault_in_rank_1_ends_both_ranks(tmp_path: Path) -> None:
    ev = tmp_path / "ev.jsonl"
    code, log, took = _job(
        tmp_path, "--steps", "200", DFLASH_FAULT="drafter:0:step:3:rank:1", DFLASH_EVENTS=str(ev)
    )
    assert code != 0, log[-4000:]
    assert took < JOB_LIMIT_S
    assert "[rank 1] Traceback (most recent call last):" in log
    assert "[rank 1] RuntimeError: injected fault: drafter worker 0 at step 3" in log
    assert max(_steps(log)) <= 4  # rank 0 went no further than the step rank 1 never joined
    events = read_events(ev)
    err = next(e for e in events if e["event"] == "error")
    assert "PeerError" in err["message"], err  # rank 0's collective saw its peer go
    assert events[-1]["event"] == "exit" and events[-1]["code"] == 1
    fault_at = next(e["time"] for e in events if e["event"] == "step" and e["step"] == 3)
    assert events[-1]["time"] - fault_at < float(DIST_TIMEOUT)  # within the timeout, no hang
    _ranks_gone(events)


def test_sigterm_stops_both_after_one_step_and_resume_auto_goes_on(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _cmd(tmp_path, "--steps", "60", "--checksum-every", "50"), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=_env(), start_new_session=True,
    )  # fmt: skip
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("step=3 "):
                break
        os.killpg(proc.pid, signal.SIGTERM)  # the job's process group: torchrun forwards it
        seen += proc.stdout.read().splitlines(keepends=True)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = "".join(seen)
    stops = [
        (m.group(1) or "", int(m.group(2))) for ln in log.splitlines() if (m := STOPPED.match(ln))
    ]
    assert sorted(r for r, _ in stops) == ["", "[rank 1] "], log[-4000:]  # both ranks stopped
    step = stops[0][1]
    assert stops[1][1] == step and 3 <= step < 60  # after the same step
    events = read_events(tmp_path / "events.jsonl")
    assert events[-1]["event"] == "exit" and events[-1]["code"] == 128 + signal.SIGTERM
    saved = [e["step"] for e in events if e["event"] == "checkpoint"]
    assert saved == [step] and (tmp_path / "checkpoints" / f"step_{step:08d}.pt").is_file()
    assert _checksums(events)[step][0] == _checksums(events)[step][1]  # agreed at the stop
    _ranks_gone(events)

    code, log2, _ = _job(tmp_path, "--steps", "60", "--resume", "auto", "--checksum-every", "50")
    assert code == 0, log2[-4000:]
    assert f"resumed from {tmp_path / 'checkpoints' / f'step_{step:08d}.pt'} at step {step}" in log2
    assert f"[rank 1] dflash-train: weights, optimiser state and step {step} from rank 0" in log2
    assert _steps(log2) == list(range(step + 1, 61))
    events = read_events(tmp_path / "events.jsonl")  # appended: the stopped run, then this
    at = next(i for i, e in enumerate(events) if e.get("action") == "resumed")
    before, after = _checksums(events[:at]), _checksums(events[at:])
    assert after[step] == before[step]  # both ranks start from the saved weights
    assert {step, 50, 60} <= set(after), after
    assert all(len({v for r in rows for v in r}) == 1 for rows in after.values()), after
    assert events[-1]["code"] == 0


def test_weights_that_drift_on_one_rank_end_the_job(tmp_path: Path) -> None:
    code, log, took = _job(
        tmp_path, "--steps", "200", "--checksum-every", "1",
        DFLASH_FAULT="weights:0:step:2:rank:1",
    )  # fmt: skip
    assert code != 0 and took < JOB_LIMIT_S, log[-4000:]
    events = read_events(tmp_path / "events.jsonl")
    checks = [e for e in events if e["event"] == "replica_checksum"]
    assert [c["equal"] for c in checks] == [True, True, False], checks
    bad = checks[-1]["ranks"]
    assert checks[-1]["step"] == 2 and bad[0][0] == bad[0][1] == bad[1][1] != bad[1][0], bad
    err = next(e for e in events if e["event"] == "error")
    assert "ChecksumMismatch" in err["message"] and events[-1]["code"] == 1
    assert "[rank 1] dflash_train.dist.ChecksumMismatch: replica weights differ" in log
    _ranks_gone(events)
