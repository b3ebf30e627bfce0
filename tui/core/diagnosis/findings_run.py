"""Findings about the run, its logs and the telemetry (pure; the GPU ones are in findings.py)."""

from __future__ import annotations

import math

from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.rundir import exit_meaning, exit_text
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.finding import Finding, duration
from dflash_tui.core.diagnosis.progress import Progress
from dflash_tui.core.diagnosis.thresholds import Thresholds
from dflash_tui.core.diagnosis.views import Diagnosis, LogView


def log_findings(diag: Diagnosis, th: Thresholds) -> list[Finding]:
    """log-missing. "The launch failed" is said as a fact only of the run's own log or of a
    log its command names (it redirects there); an extra watched log that is absent is a
    warning that says so; with no run of ours recorded, a failed launch is a likely cause."""
    out = []
    for log in diag.logs:
        if not log.exists:
            out.append(_log_missing(diag, log, th))
    return out


def tied_to_run(diag: Diagnosis, path: str, is_run_log: bool) -> bool:
    """The run's own log, or a log the run's recorded command writes (names its path)."""
    run = diag.run
    return is_run_log or (run is not None and bool(run.command) and path in (run.command or ""))


def _log_missing(diag: Diagnosis, log: LogView, th: Thresholds) -> Finding:
    run = diag.run
    bound = ""  # missing at the first sample: it went missing before, when is not known
    if run is not None and run.started_at is not None and log.is_run_log:
        missing_for: float | None = diag.time - run.started_at
    elif log.missing_since is not None and log.missing_since < diag.time:
        missing_for = diag.time - log.missing_since
        bound = "at least " if log.missing_at_least else ""
    else:
        missing_for = None
    how_long = f" for {bound}{duration(missing_for)}" if missing_for is not None else ""
    what = f"log {log.path!r} does not exist{how_long}" + (f" ({log.error})" if log.error else "")
    if tied_to_run(diag, log.path, log.is_run_log) and run is not None:
        late = diag.run_state in ACTIVE and (missing_for or 0) >= th.log_grace_s
        return Finding(
            "log-missing",
            "error" if late or log.is_run_log else "warning",
            (),
            f"{what}: it is run {run.id}'s "
            + ("own log" if log.is_run_log else "log (its command writes there)")
            + ", and a program that started would have created it, so the launch failed "
            "before it could write a line (shell, container, interpreter or a wrong path). "
            "Next: check the launch command and the path; launch again to capture the "
            "launcher's own error.",
            "launch",
        )
    if run is None:
        return Finding(
            "log-missing",
            "warning",
            (),
            f"{what}, and no run was launched from here. If a job started by hand should "
            "write it, it likely failed before writing a line (shell, container, interpreter) "
            "or writes elsewhere (a wrong path). Next: check the path and that job; or launch "
            "the run from here, which records the launcher's own error.",
            "launch",
        )
    alive = diag.run_state in ACTIVE
    return Finding(
        "log-missing",
        "warning",
        (),
        f"{what}. It is a log watched besides run {run.id}'s own, which "
        + ("is alive and has its own log" if alive else f"is {diag.run_state}")
        + ": this file says nothing about that launch. Next: check the path (--log, "
        "run.logs), or whether the program that should write it runs.",
    )


def run_findings(diag: Diagnosis, th: Thresholds, progress: Progress | None) -> list[Finding]:
    run, state = diag.run, diag.run_state
    if run is None:
        return []
    if state == "launch-failed":
        why = run.launch_error or (
            exit_text(run.exit_code)
            if run.exit_code is not None
            else "its directory has a start time but no readable pid file (a broken record)"
        )
        return [
            Finding(
                "launch-failed",
                "error",
                (),
                f"run {run.id} failed to start: {why.strip()[-400:]}. Next: read the log's "
                "last lines, fix the command or environment, then launch again.",
            )
        ]
    if state in ("exited", "killed"):
        asked = run.kill_requested_at is not None
        ok = run.exit_code == 0 or (state == "killed" and asked)
        code = "unknown" if run.exit_code is None else str(run.exit_code)
        cause = "stopped on request" if asked else exit_meaning(run.exit_code)
        return [
            Finding(
                "run-exited",
                "info" if ok else "error",
                (),
                f"run {run.id} {state} (exit code {code}: {cause})."
                + ("" if ok else " Next: read the log's last lines; restart when fixed."),
                None if ok else "restart",
            )
        ]
    out = _loss_findings(run.id, state, progress)
    if state == "running" and progress is not None and progress.last_step_at is not None:
        usual = progress.typical_interval or 0.0
        limit = max(th.no_progress_factor * usual, th.no_progress_min_s)
        stalled = diag.time - progress.last_step_at
        if stalled > limit:
            out.append(
                Finding(
                    "no-progress",
                    "warning",
                    (),
                    f"run {run.id} alive but no new step for {duration(stalled)} (usual step "
                    f"time {usual:.1f}s, last step {progress.last_step}): a hang, a deadlock "
                    "between workers, or a long recompile. Next: check the log and the GPUs' "
                    "load; restart it if it stays stuck.",
                    "restart",
                )
            )
    return out


def _loss_findings(run_id: str, state: str, progress: Progress | None) -> list[Finding]:
    """loss-not-finite: the latest step's loss is nan or inf while the run is alive."""
    last = progress.last if progress is not None else None
    if state not in ACTIVE or last is None or last.loss is None or math.isfinite(last.loss):
        return []
    step = last.step
    if step is None and progress is not None:
        step = progress.last_step
    at = f" at step {step}" if step is not None else ""
    return [
        Finding(
            "loss-not-finite",
            "error",
            (),
            f"loss is {last.loss}{at}: training diverged; run {run_id} is still burning GPU "
            "time. Next: kill it, then lower the learning rate or check the data before "
            "launching again (a run resumes only with a fixed --out-dir and --resume auto).",
            "kill",
        )
    ]


def telemetry_findings(snap: Snapshot) -> list[Finding]:
    out = []
    tel = snap.telemetry
    if tel.source == "none":
        out.append(
            Finding(
                "telemetry-unavailable",
                "warning",
                (),
                f"no GPU readings: {tel.error or 'no NVML and no nvidia-smi'}. GPU labels cannot "
                "be judged; run and log state still are. Next: install the NVIDIA driver tools "
                "or check that the container sees the GPUs.",
            )
        )
    if snap.probe_mode == "shell":
        why = next((e for e in snap.errors if e.startswith("degraded probe")), "no python3")
        out.append(
            Finding(
                "probe-degraded",
                "warning",
                (),
                f"{why.rstrip(';')}: the host has no python3, so the shell probe (nvidia-smi, "
                "/proc, tail) runs instead: no NVML, no CPU load per process. "
                "Next: install python3 on the host or in the container.",
            )
        )
    problems = [e for e in snap.errors if not e.startswith("degraded probe")]
    problems += [tel.error] if tel.error and tel.source != "none" else []
    if problems:
        shown = "; ".join(problems[:3]) + (
            f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        )
        out.append(
            Finding(
                "telemetry-degraded",
                "warning",
                (),
                f"some readings were malformed or unreadable and were skipped: {shown}. "
                "Values shown may be incomplete.",
            )
        )
    return out


def supervisor_findings(snap: Snapshot) -> list[Finding]:
    """supervisor-stale: a supervisor that never said it stopped has not beaten lately."""
    rec = snap.supervisor
    if rec is None or not rec.stale(snap.time):
        return []
    age = rec.age(snap.time)
    when = f"last heartbeat {duration(age)} ago" if age is not None else "no heartbeat"
    return [
        Finding(
            "supervisor-stale",
            "warning",
            (),
            f"supervisor PID {rec.pid} on {rec.host or '?'}: {when} (it beats every "
            f"{rec.heartbeat_s:g}s): it was killed, its machine slept or it hangs, so nothing "
            "restarts this run or sends alerts. Next: read its supervisor.log; start it again "
            "with `dflash-tui supervise --detach` (it re-attaches, keeping its restart count).",
        )
    ]
