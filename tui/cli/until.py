"""What ``dflash-tui wait --until OUTCOME`` waits for, judged on one status document (pure).

Each document is ``reached`` (the outcome holds), ``failed`` (it can no longer hold: the run
ended, or an error finding about the run), or ``pending``. Findings about where the GPUs are
and how they are read (a topology the machine does not match, telemetry that is missing) and
the machine's own warnings do not stop a run from stepping, so they fail no wait; ``healthy``
alone asks for no error finding at all.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Literal

from dflash_tui.core.base.codes import GPU_LABELS
from dflash_tui.core.base.rundir import ENDED_STATES, exit_text

OUTCOMES = ("started", "first-step", "step:N", "exited", "healthy")
ENDED = ENDED_STATES
# Error findings that say nothing about the run itself.
NOT_THE_RUN = frozenset(
    {
        *GPU_LABELS,
        "topology-mismatch",
        "telemetry-unavailable",
        "telemetry-degraded",
        "probe-degraded",
        "processes-not-visible",
        "host-unreachable",
        "scheduler-unavailable",
        "supervisor-stale",
        "host-memory-low",
        "disk-low",
        "checkpoint-stale",
    }
)
Verdict = Literal["reached", "failed", "pending"]


@dataclass(frozen=True)
class Until:
    kind: str  # one of OUTCOMES, "step:N" as "step"
    step: int = 0

    def __str__(self) -> str:
        return f"step:{self.step}" if self.kind == "step" else self.kind


def parse_until(text: str) -> Until:
    """``--until``'s value; argparse reports the ValueError's words."""
    if text in OUTCOMES and text != "step:N":
        return Until(text)
    if text.startswith("step:") and text[5:].isdigit():
        return Until("step", int(text[5:]))
    raise argparse.ArgumentTypeError(
        f"{text!r}: one of started, first-step, step:N (N a step number), exited, healthy"
    )


def _run_words(run: dict[str, Any]) -> str:
    words = f"run {run.get('id') or '(none)'} {run.get('state')}"
    if isinstance(run.get("exit_code"), int):
        words += f", {exit_text(run['exit_code'])}"
    return words


def _step_words(progress: dict[str, Any] | None) -> str:
    if not progress:
        return "no step yet"
    words = f"step {progress.get('step')}"
    if progress.get("loss") is not None:
        words += f" loss {progress['loss']:.4g}"
    elif progress.get("loss_finite") is False:
        words += " loss not finite"
    return words


def _reached(doc: dict[str, Any], until: Until) -> bool:
    run, progress = doc["run"], doc.get("progress") or {}
    state, step = run.get("state"), progress.get("step")
    exited_ok = state == "exited" and run.get("exit_code") == 0
    if until.kind == "started":
        return state == "running" or exited_ok
    if until.kind == "first-step":
        return step is not None
    if until.kind == "step":
        return step is not None and step >= until.step
    if until.kind == "exited":
        return exited_ok
    errors = [f for f in doc.get("findings", []) if f.get("severity") == "error"]
    return state == "running" and step is not None and not errors  # healthy


def verdict_on(doc: dict[str, Any], until: Until) -> tuple[Verdict, str]:
    """The verdict on one host's document, and the sentence that says why."""
    if "error" in doc:
        return "pending", f"unreachable: {doc['error']}"
    run, progress = doc["run"], doc.get("progress")
    now = f"{_run_words(run)}, {_step_words(progress)}"
    if _reached(doc, until):
        return "reached", f"{until} reached: {now}"
    if run.get("state") in ENDED:
        return "failed", f"{until} cannot be reached: {now}"
    for f in doc.get("findings", []):
        if f.get("severity") == "error" and f.get("code") not in NOT_THE_RUN:
            return "failed", f"{until} cannot be reached: {f['code']}: {f['message']}"
    return "pending", f"waiting for {until}: {now}"
