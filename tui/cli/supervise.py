"""``dflash-tui supervise [COMMON FLAGS] [--detach] [--stop] [--once]``: the headless supervisor.

In the foreground it logs to stderr (systemd's journal, a tmux pane) until SIGTERM, SIGINT or
SIGHUP. ``--detach`` starts the same command in a session of its own, its log in
``<run_root>/supervisor.log`` (a remote run root's supervisor logs on this machine, under
``~/.local/state/dflash-tui/``), and returns once the child has written its first heartbeat,
or with its error. ``--stop`` ends the recorded supervisor by its PID, verified by its start
time, on the machine it runs on. ``--once`` runs one decision cycle (cron, tests).

Exit status: 0 done; 1 an error; 3 another supervisor holds the run root (its PID, host and
start time are named), or ours was taken over.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dflash_tui.core.base.config import expand_local
from dflash_tui.core.base.config_types import Config, HostConfig, JobConfig
from dflash_tui.core.base.local_proc import alive
from dflash_tui.core.base.paths import state_dir
from dflash_tui.core.base.supervision import LOG_FILE, SupervisorRecord
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.base.timings import START_WINDOW_S
from dflash_tui.core.control import supervisor_files as files
from dflash_tui.core.control.job_supervisor import JobSupervisor
from dflash_tui.core.control.script import ControlError
from dflash_tui.core.control.supervisor import Options, Supervisor
from dflash_tui.core.control.supervisor_loop import LockLost, SupervisorBusy, SupervisorLoop
from dflash_tui.core.control.supervisor_state import describe_owner, hostname
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.transport import TransportError

READY_FD = "DFLASH_SUPERVISE_READY_FD"
LOG_ENV = "DFLASH_SUPERVISE_LOG"
BUSY = 3
READY_TIMEOUT_S = 90.0  # an SSH connect and a first cycle fit in this
STOP_WAIT_S = 15.0


def log_path(host: HostConfig) -> Path:
    """Where a detached supervisor logs: ``$DFLASH_SUPERVISE_LOG`` if set, else in the run
    root when it is on this machine."""
    if os.environ.get(LOG_ENV):
        return Path(os.environ[LOG_ENV])
    if host.address is None and host.container is None:
        return expand_local(host.run_root) / LOG_FILE
    key = hashlib.sha256(f"{host.label}\0{host.container}\0{host.run_root}".encode()).hexdigest()
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in host.label)
    return state_dir() / f"supervisor-{safe}-{key[:8]}.log"


class SafeFormatter(logging.Formatter):
    """Every log line through ``terminal_safe``: decision messages quote a launch_error file
    the job wrote and remote stderr, and ``tail supervisor.log`` on a terminal must not act
    on an escape in them (a newline in a message stays a line break)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))


def _logger() -> logging.Logger:
    log = logging.getLogger("dflash_tui.supervisor")
    if not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(SafeFormatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


def _ready_pipe() -> int | None:
    fd = os.environ.pop(READY_FD, None)
    return int(fd) if fd and fd.isdigit() else None


def _tell(fd: int | None, line: str) -> None:
    if fd is None:
        return
    try:
        os.write(fd, (line.replace("\n", " ") + "\n").encode())
        os.close(fd)
    except OSError:
        pass


async def _serve(cfg: Config, args: argparse.Namespace, fd: int | None) -> int:
    host, log = cfg.host, _logger()
    opts = Options(
        poll=args.poll or cfg.interval,
        interval=cfg.interval,
        start_window=args.start_window if args.start_window is not None else Options.start_window,
        keep=args.keep_runs or 0,
        mode="once" if args.once else "daemon",
        log_path=os.environ.get(LOG_ENV),
        record=cfg.record,
    )
    transport = make_transport(host)
    sup = Supervisor(transport, host, host.restart, cfg.alerts, log, opts)
    try:
        try:
            await sup.acquire()
        except SupervisorBusy as exc:
            log.error("%s", exc)
            _tell(fd, f"error {exc}")
            return BUSY
        if args.once:
            decision = await sup.once()
            # The message may quote a launch_error file the job wrote, or remote stderr.
            print(terminal_safe(f"{decision.action}: {decision.message}"))
            return 0
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, _stopper(sup, stop, sig))
        await sup.run(stop, lambda: _tell(fd, f"ready {os.getpid()}"))
        return 0
    except LockLost:  # the loop logged it
        return BUSY
    except (ControlError, TransportError) as exc:
        log.error("supervise on %s: %s", host.label, exc)
        _tell(fd, f"error {exc}")
        return 1
    finally:
        await transport.close()


def _stopper(sup: SupervisorLoop, stop: asyncio.Event, sig: signal.Signals) -> Callable[[], None]:
    def on_signal() -> None:
        sup.stop_reason = f"signal {sig.name}"
        stop.set()

    return on_signal


def _detach(host: HostConfig, argv: list[str]) -> int:
    path = log_path(host)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        logf = open(path, "ab")  # noqa: SIM115 - handed to the child
    except OSError as exc:
        print(f"dflash-tui supervise: cannot open the log {path}: {exc}", file=sys.stderr)
        return 1
    r, w = os.pipe()
    child_argv = [a for a in argv if a != "--detach"]
    env = dict(os.environ, **{READY_FD: str(w), LOG_ENV: str(path)})
    with logf:
        child = subprocess.Popen(
            [sys.executable, "-m", "dflash_tui.cli.main", *child_argv],
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=logf,
            env=env,
            pass_fds=(w,),
            start_new_session=True,
        )
    os.close(w)
    line = _read_line(r, READY_TIMEOUT_S)
    os.close(r)
    if line.startswith("ready"):
        print(f"supervisor PID {child.pid} supervises {host.run_root} on {host.label}; log: {path}")
        return 0
    try:
        rc = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    why = line.partition(" ")[2] if line.startswith("error") else _log_tail(path)
    if rc is None:
        why = why or f"no heartbeat within {READY_TIMEOUT_S:g}s (PID {child.pid} still runs)"
    # `why` is the supervisor log's tail: it quotes the run's and the host's own words.
    print(
        terminal_safe(f"dflash-tui supervise: {why or f'the supervisor exited {rc}'}"),
        file=sys.stderr,
    )
    return rc if rc else 1


def _read_line(fd: int, timeout: float) -> str:
    import select

    data, deadline = b"", time.monotonic() + timeout
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def _stop(host: HostConfig) -> int:
    transport = make_transport(host)
    try:
        rep = await files.read(transport, host.run_root)
    finally:
        await transport.close()
    owner = rep.owner or rep.record or {}
    rec = SupervisorRecord.from_dict(rep.record)
    if not owner or (
        rec is not None and rec.stopped_at is not None and rec.pid == owner.get("pid")
    ):
        print(f"no supervisor runs for {host.run_root} on {host.label}", file=sys.stderr)
        return 1
    pid, ticks, where = owner.get("pid"), owner.get("start_ticks"), owner.get("host")
    who = describe_owner(rep.owner, rep.record)
    if where != hostname():
        print(f"the supervisor runs on {where}: stop it there ({who})", file=sys.stderr)
        return 1
    if not isinstance(pid, int) or not alive(pid, ticks):
        print(f"the recorded supervisor is gone ({who}); the next one takes its lock over")
        return 0
    os.kill(pid, signal.SIGTERM)  # verified just above by its start time
    deadline = time.monotonic() + STOP_WAIT_S
    while alive(pid, ticks) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    if alive(pid, ticks):
        os.kill(pid, signal.SIGKILL)
        print(f"supervisor {who} did not end within {STOP_WAIT_S:g}s: killed")
        return 0
    print(f"stopped supervisor {who}")
    return 0


async def _serve_job(cfg: Config, job: JobConfig, args: argparse.Namespace, fd: int | None) -> int:
    """The job supervisor (tui/core/control/job_supervisor.py) in the foreground."""
    log = _logger()
    start = args.start_window if args.start_window is not None else START_WINDOW_S
    sup = JobSupervisor(
        job,
        cfg.hosts,
        cfg.hosts[0].restart,
        log,
        poll=args.poll or cfg.interval,
        start_window=start,
        keep=args.keep_runs or 0,
    )
    try:
        try:
            await sup.acquire()
        except SupervisorBusy as exc:
            log.error("%s", exc)
            _tell(fd, f"error {exc}")
            return BUSY
        if args.once:
            print(terminal_safe(await sup.cycle()))
            await sup.release()
            return 0
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, _stopper(sup, stop, sig))
        await sup.run(stop, lambda: _tell(fd, f"ready {os.getpid()}"))
        return 0
    except LockLost:  # the loop logged it
        return BUSY
    except (ControlError, TransportError) as exc:
        log.error("supervise job %s: %s", job.name, exc)
        _tell(fd, f"error {exc}")
        return 1
    finally:
        await sup.close()


def run_supervise(cfg: Config, args: argparse.Namespace, argv: list[str]) -> int:
    if cfg.job is not None:  # its record is in every member's run root: the first one's is read
        if args.stop:
            return asyncio.run(_stop(cfg.hosts[0]))
        if args.detach:
            return _detach(cfg.hosts[0], argv)
        return asyncio.run(_serve_job(cfg, cfg.job, args, _ready_pipe()))
    if len(cfg.hosts) > 1:
        print("dflash-tui supervise: supervises one host; pass --host", file=sys.stderr)
        return 1
    if args.stop:
        try:
            return asyncio.run(_stop(cfg.host))
        except (ControlError, TransportError) as exc:
            print(f"dflash-tui supervise --stop: {exc}", file=sys.stderr)
            return 1
    if args.detach:
        return _detach(cfg.host, argv)
    return asyncio.run(_serve(cfg, args, _ready_pipe()))
