"""``dflash-tui wait``: returns as soon as the outcome is reached (0) or can no longer be (1),
and at ``--timeout`` (124). Real runs on this machine: a command that fails at once, the
bundled tiny pipeline, a command that ends well."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schemas import check_status
from wait_util import TINY, cli, timed

from dflash_tui.cli.until import Until, parse_until, verdict_on
from dflash_tui.core.base.config_types import DEFAULT_INTERVAL
from dflash_tui.core.base.timings import START_WINDOW_S

PROMPT = START_WINDOW_S + DEFAULT_INTERVAL  # the start window plus one interval


def test_a_run_that_exits_3_at_once_fails_the_wait_quickly(tmp_path: Path) -> None:
    root = ["--run-root", str(tmp_path / "runs")]
    launched = cli("launch", *root, "--command", "echo 'oops: no such dataset'; exit 3")
    assert launched.returncode == 1 and "exit 3" in launched.stdout
    res, took = timed("wait", *root, "--until", "first-step", "--timeout", "60")
    assert res.returncode == 1, res.stdout + res.stderr
    assert took < PROMPT, took
    (line,) = res.stdout.splitlines()
    assert line.startswith("first-step cannot be reached: run ") and "launch-failed" in line
    assert "exit 3" in line and "log: oops: no such dataset" in line


def test_the_launchers_own_error_is_quoted(tmp_path: Path) -> None:
    root = ["--run-root", str(tmp_path / "runs")]
    cli("launch", *root, "--command", "no-such-program-here --flag")
    res, took = timed("wait", *root, "--until", "started")
    assert res.returncode == 1 and took < PROMPT
    assert "launcher: " in res.stdout and "no-such-program-here: not found" in res.stdout


@pytest.mark.slow
def test_the_tiny_pipeline_reaches_its_first_step_then_a_timeout(tmp_path: Path) -> None:
    root = ["--run-root", str(tmp_path / "runs")]
    launched = cli("launch", *root, "--command", TINY)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    try:
        res, _ = timed("wait", *root, "--until", "first-step", "--timeout", "150", "--json")
        assert res.returncode == 0, res.stdout + res.stderr
        doc = json.loads(res.stdout)
        check_status(doc)
        assert doc["run"]["state"] == "running" and doc["progress"]["step"] >= 1
        assert res.stderr.strip().splitlines()[-1].startswith("first-step reached: run ")
        late, took = timed("wait", *root, "--until", "step:1000000", "--timeout", "2")
        assert late.returncode == 124, late.stdout + late.stderr
        assert 2 <= took < 2 + PROMPT
        assert late.stdout.startswith("timed out after 2 s: waiting for step:1000000: run ")
    finally:
        cli("kill", *root)
    ended = cli("wait", *root, "--until", "step:1000000")
    assert ended.returncode == 1 and "killed" in ended.stdout


def test_exited_is_reached_when_the_run_ends_well(tmp_path: Path) -> None:
    root = ["--run-root", str(tmp_path / "runs")]
    cli("launch", *root, "--command", f"sleep {START_WINDOW_S + 1}")
    res, took = timed("wait", *root, "--until", "exited", "--timeout", "30")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("exited reached: run ") and "exit 0" in res.stdout
    assert took < START_WINDOW_S + 1 + PROMPT


def test_a_bad_outcome_is_a_usage_error() -> None:
    res = cli("wait", "--until", "step:ten")
    assert res.returncode == 2 and "one of started, first-step, step:N" in res.stderr


def doc(
    state: str, step: int | None = None, findings: tuple[dict, ...] = (), code: int | None = None
) -> dict:
    progress = None if step is None else {"step": step, "loss": 1.0, "loss_finite": True}
    run = {"id": "r1", "state": state, "exit_code": code, "exit_meaning": None}
    return {"run": run, "progress": progress, "findings": list(findings)}


ERROR = {"code": "loss-not-finite", "severity": "error", "message": "loss is nan", "gpus": []}
PLACEMENT = {"code": "missing", "severity": "error", "message": "GPU 0 missing", "gpus": [0]}


@pytest.mark.parametrize(
    ("until", "document", "verdict"),
    [
        ("started", doc("starting"), "pending"),
        ("started", doc("running"), "reached"),
        ("started", doc("exited", code=0), "reached"),
        ("first-step", doc("running"), "pending"),
        ("first-step", doc("running", 1), "reached"),
        ("first-step", doc("exited", code=1), "failed"),
        ("first-step", doc("running", findings=(ERROR,)), "failed"),
        ("first-step", doc("running", findings=(PLACEMENT,)), "pending"),
        ("step:20", doc("running", 19), "pending"),
        ("step:20", doc("running", 20), "reached"),
        ("exited", doc("running", 5), "pending"),
        ("exited", doc("exited", 5, code=0), "reached"),
        ("exited", doc("killed", 5, code=137), "failed"),
        ("healthy", doc("running", 5), "reached"),
        ("healthy", doc("running", 5, findings=(PLACEMENT,)), "pending"),
        ("healthy", doc("none"), "pending"),
    ],
)
def test_the_verdict_on_one_document(until: str, document: dict, verdict: str) -> None:
    assert verdict_on(document, parse_until(until))[0] == verdict


def test_an_unreachable_document_is_pending_until_the_stall_time() -> None:
    assert verdict_on({"error": "ssh x: refused"}, Until("started")) == (
        "pending",
        "unreachable: ssh x: refused",
    )
