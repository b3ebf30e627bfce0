"""``dflash-tui launch | kill | restart``: the app's run keys, for scripts.

ActionProgress goes to stderr as lines, the result to stdout (a sentence, or JSON with ``--json``).
Exit 0 when the action succeeded, 1 when it did not (the message says why). Everything printed
passes ``terminal_safe``: messages quote what the host said (process names, a launch_error
file, the log's last lines, a remote's or a container runtime's stderr), which a job controls.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from typing import Any

from dflash_tui.core.base.config_types import Config, HostConfig, JobConfig
from dflash_tui.core.base.rundir import ALIVE_STATES
from dflash_tui.core.base.snapshot import Proc
from dflash_tui.core.base.text import mib, names_host, printable, terminal_safe
from dflash_tui.core.base.timings import RELEASE_TIMEOUT_S
from dflash_tui.core.control.job import JobResult, kill_job, launch_job, restart_job
from dflash_tui.core.control.kill import KillResult, kill_latest
from dflash_tui.core.control.launch import LaunchResult, launch
from dflash_tui.core.control.restart import RestartResult, clear_compile_cache, restart_latest
from dflash_tui.core.control.script import ActionProgress, ControlError, fetch_run
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.transport import TransportError

Result = LaunchResult | KillResult | RestartResult


def say(text: str, *, err: bool = False) -> None:
    """Print a message (stderr with ``err``), its untrusted parts made terminal-safe."""
    print(terminal_safe(text), file=sys.stderr if err else sys.stdout, flush=True)


class _StderrProgress:
    """ActionProgress lines on stderr: at most one a second unless the phase changes."""

    def __init__(self) -> None:
        self.phase, self.last = "", 0.0

    def __call__(self, p: ActionProgress) -> None:
        now = time.monotonic()
        if p.phase == self.phase and now - self.last < 1.0:
            return
        self.phase, self.last = p.phase, now
        limit = f"/{p.limit:g}" if p.limit is not None else ""
        # One progress line, always: a process name's own newline (argv is the job's to set)
        # is shown escaped, so no part of it lands on a line of its own.
        line = printable(f"[{p.phase} {p.elapsed:.1f}{limit} s] {p.message}")
        print(line, file=sys.stderr, flush=True)


async def _launch(host: HostConfig, args: argparse.Namespace, **kw: Any) -> Result:
    transport = make_transport(host)
    try:
        if getattr(args, "restart", False) or args.subcommand == "restart":
            return await restart_latest(
                transport,
                host,
                grace=args.grace,
                start_window=args.start_window,
                clear_cache=args.clear_cache,
                release_timeout=getattr(args, "release_timeout", RELEASE_TIMEOUT_S),
                **kw,
            )
        if args.clear_cache:
            # Clearing the cache under a live run would pull it from under the job.
            rep = await fetch_run(transport, host.run_root)
            if rep.state(args.start_window) not in ALIVE_STATES:
                say(await clear_compile_cache(transport, host), err=True)
        return await launch(transport, host, start_window=args.start_window, **kw)
    finally:
        await transport.close()


async def _kill(host: HostConfig, args: argparse.Namespace, **kw: Any) -> Result:
    transport = make_transport(host)
    try:
        return await kill_latest(transport, host, grace=args.grace, **kw)
    finally:
        await transport.close()


def _proc(p: Proc) -> dict[str, Any]:
    return {"pid": p.pid, "pgid": p.pgid, "sid": p.sid, "state": p.state, "name": p.cmd}


def result_json(result: Result | None) -> dict[str, Any] | None:
    """The result as plain JSON types (processes as {pid, pgid, sid, state, name})."""
    if result is None:
        return None
    out: dict[str, Any] = {}
    for f in dataclasses.fields(result):
        v = getattr(result, f.name)
        if isinstance(v, LaunchResult | KillResult):
            v = result_json(v)
        elif isinstance(v, frozenset):
            v = sorted(v)
        elif isinstance(v, tuple):
            v = [_proc(x) if isinstance(x, Proc) else _plain(x) for x in v]
        out[f.name] = v
    return out


def _plain(x: Any) -> Any:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # an instance, not the class
        return dataclasses.asdict(x)
    return x


def _human(result: Result) -> list[str]:
    lines = [result.message]
    if isinstance(result, RestartResult):
        parts = [result.launch] if result.launch else []
        return lines + [ln for r in parts for ln in _human(r)[1:]]
    if isinstance(result, LaunchResult) and result.log_tail:
        lines.append("last lines of the log:")
        lines += [f"  {ln}" for ln in result.log_tail]
    if isinstance(result, KillResult):
        lines += [f"  survivor: {p.pid} {printable(p.cmd)} ({p.state})" for p in result.survivors]
        lines += [f"  GPU {h.gpu}: pid {h.pid} holds {mib(h.used_mib)}" for h in result.gpu_held]
        if result.gpu_note:
            lines.append(f"  {result.gpu_note}")
    return lines


async def _slurm(host: HostConfig, args: argparse.Namespace, **kw: Any) -> Any:
    """launch | kill | restart through Slurm (tui/core/control/slurm/actions.py)."""
    from dflash_tui.core.control.slurm import actions

    transport = make_transport(host)
    try:
        if args.subcommand == "kill":
            return await actions.cancel_run(transport, host, grace=args.grace, **kw)
        if args.subcommand == "restart" or getattr(args, "restart", False):
            return await actions.requeue_or_resubmit(transport, host, grace=args.grace, **kw)
        return await actions.submit_run(transport, host, **kw)
    finally:
        await transport.close()


def run_control(cfg: Config, args: argparse.Namespace) -> int:
    if cfg.job is not None:
        return run_job_control(cfg, cfg.job, args)
    if len(cfg.hosts) > 1:
        say(f"dflash-tui {args.subcommand}: acts on one host; pass --host", err=True)
        return 1
    host = cfg.host
    kw: dict[str, Any] = {"progress": _StderrProgress()}
    if args.subcommand != "kill" and getattr(args, "keep_runs", None) and host.scheduler != "slurm":
        kw["keep"] = args.keep_runs
    action = _kill if args.subcommand == "kill" else _launch
    if host.scheduler == "slurm":
        action = _slurm
    try:
        result = asyncio.run(action(host, args, **kw))
    except (ControlError, TransportError) as exc:
        text = str(exc)  # said once: the error may name the host already
        on = "" if names_host(host.label, text) else f" on {host.label}"
        msg = f"{args.subcommand}{on}: {text}"
        if args.json:
            print(json.dumps({"ok": False, "message": msg}))
        else:
            say(f"dflash-tui: {msg}", err=True)
        return 1
    except KeyboardInterrupt:
        say(f"dflash-tui {args.subcommand}: interrupted", err=True)
        return 130
    if args.json:
        print(json.dumps(result_json(result), indent=2))
    else:
        say("\n".join(_human(result)))
    return 0 if result.ok else 1


async def _job_action(cfg: Config, job: JobConfig, args: argparse.Namespace) -> JobResult:
    progress = _StderrProgress()
    keep = getattr(args, "keep_runs", None) or 0
    if args.subcommand == "kill":
        return await kill_job(job, cfg.hosts, grace=args.grace, progress=progress)
    if args.subcommand == "restart" or getattr(args, "restart", False):
        return await restart_job(
            job,
            cfg.hosts,
            grace=args.grace,
            start_window=args.start_window,
            release_timeout=getattr(args, "release_timeout", RELEASE_TIMEOUT_S),
            keep=keep,
            progress=progress,
        )
    return await launch_job(
        job, cfg.hosts, start_window=args.start_window, keep=keep, progress=progress
    )


def job_json(result: JobResult) -> dict[str, Any]:
    """A job's result: ok, message, job, warnings, and each member's own result by label."""
    members = {
        label: {"ok": False, "message": r} if isinstance(r, str) else result_json(r)
        for label, r in result.members
    }
    return {
        "ok": result.ok,
        "message": result.message,
        "job": result.job,
        "warnings": list(result.warnings),
        "members": members,
    }


def run_job_control(cfg: Config, job: JobConfig, args: argparse.Namespace) -> int:
    """launch | kill | restart on every member of ``job`` (tui/core/control/job.py)."""
    try:
        result = asyncio.run(_job_action(cfg, job, args))
    except KeyboardInterrupt:
        say(f"dflash-tui {args.subcommand}: interrupted", err=True)
        return 130
    for w in result.warnings:
        say(f"dflash-tui: warning: {w}", err=True)
    if args.json:
        print(json.dumps(job_json(result), indent=2))
    else:
        say(result.message)
    return 0 if result.ok else 1
