"""``dflash-train``: the DFlash drafter-training pipeline (also ``python -m dflash_train.train``).

Order matters here. The first log line (``starting``) is written before anything else (so a
missing log always means the process never started; ``--help`` prints only the usage), then
every check that needs no torch, then torch is imported for the device check, and only then
is any model built. The event stream (``started``
first, with its own time) is held in memory until all of these checks pass, so bad input
creates no file: its ``error`` and ``exit`` events go only to a stream the caller named
(``--events`` or ``$DFLASH_EVENTS``). Exit status: 0 done, 1 a worker or the setup failed
(traceback in the log and the ``error`` event), 2 bad input, 128+n on signal n.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shlex
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from dflash_train.cli import Settings, resolve
from dflash_train.commands import SUBCOMMANDS
from dflash_train.commands import main as subcommand
from dflash_train.events import EventLog, default_events_path, log, set_log_prefix
from dflash_train.jsonl import DataError
from dflash_train.ranks import world_from_env
from dflash_train.topology import TopologyError
from dflash_train.usage import UsageError


def _stack_dumps() -> None:
    """``kill -USR1 PID`` prints every thread's Python stack to the log, without stopping
    the run: where a stuck compile or worker waits (bench/device_pipeline.sh's timeouts send
    it before killing).

    The signal is blocked in every thread (the mask is set here, in the main thread, before
    any other thread starts, and inherited) and taken by a thread of its own (``sigwait``),
    which dumps the stacks holding the GIL: no other thread runs Python meanwhile, so no frame
    it walks is being freed. faulthandler's own handler dumped them from the signal's context
    while the workers ran on, and a few SIGUSR1 crashed the run (SIGSEGV). A worker stuck in
    a C call that released the GIL, the usual hang, is dumped as well. Signals sent while one
    waits are merged into one dump. The processes the run starts inherit the mask: a SIGUSR1
    sent to the run's whole group is ignored by them (instead of ending them, its default)."""
    if not hasattr(signal, "pthread_sigmask"):
        return
    try:
        fd = sys.stderr.fileno()  # the log; faulthandler writes to the descriptor itself
    except (AttributeError, OSError, ValueError):
        return  # no stderr to write to (an embedding caller's): no dumps
    usr1 = {signal.SIGUSR1}
    signal.pthread_sigmask(signal.SIG_BLOCK, usr1)

    def dump_on_signal() -> None:
        while True:
            signal.sigwait(usr1)
            with contextlib.suppress(OSError, ValueError):  # the log went: the run goes on
                faulthandler.dump_traceback(fd, all_threads=True)

    threading.Thread(target=dump_on_signal, name="stack-dumps", daemon=True).start()


def _fail_usage(events: EventLog, message: str) -> int:
    log(f"dflash-train: error: {message}", sys.stderr)
    events.emit("error", kind="usage", message=message, traceback=None)
    events.emit("exit", code=2)
    return 2


def _flag_value(argv: list[str], name: str) -> str | None:
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def _named_events(argv: list[str]) -> Path | None:
    """The stream the caller named (``--events``, else ``$DFLASH_EVENTS``), found without
    trusting the arguments: where a usage error is reported. The default one under the out
    dir is never created for it. Under torchrun only rank 0 writes events."""
    named = _flag_value(argv, "--events") or os.environ.get("DFLASH_EVENTS")
    return Path(named) if named and _rank() == 0 else None


def _rank() -> int:
    try:
        return world_from_env().rank
    except UsageError:  # reported by the checks (resolve reads the same variables)
        return 0


def _checked(argv: list[str]) -> Settings:
    """Every check of the input: first those without torch, then the devices (imports torch)."""
    s = _check_devices(resolve(argv))
    if s.attention == "flex" and s.device == "cpu":
        raise UsageError("--attention flex needs CUDA: no flex backward on the CPU")
    return s


def _asks_help(argv: list[str]) -> bool:
    """``-h`` or ``--help`` (argparse accepts ``--he``) before any ``--``: only help is printed."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    return any(a == "-h" or (len(a) > 3 and "--help".startswith(a)) for a in words)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:  # export, regen: their own flags and checks
        return subcommand(argv)
    if _rank():  # torchrun's other ranks: their lines say so (rank 0 writes the step= lines)
        set_log_prefix(f"[rank {_rank()}] ")
    if not _asks_help(argv):  # help is not a start: a log holding only usage would mislead
        log(f"dflash-train starting pid={os.getpid()} argv={shlex.join(argv)}")
    _stack_dumps()
    t0 = time.monotonic()
    events = EventLog(None, hold=True)  # written once the input is known good
    events.emit("started", pid=os.getpid(), argv=argv, cwd=os.getcwd())
    try:
        settings = _checked(argv)
    except SystemExit as exc:  # argparse: usage already printed
        code = exc.code if isinstance(exc.code, int) else 2
        if code:
            events.emit("error", kind="usage", message="bad command line", traceback=None)
        events.emit("exit", code=code)
        events.release(_named_events(argv), warn=False)
        events.close()
        return code
    except (UsageError, TopologyError) as exc:
        code = _fail_usage(events, str(exc))
        events.release(_named_events(argv), warn=False)
        events.close()
        return code
    except Exception as exc:  # a check that broke (torch's import, CUDA): the traceback, exit 1
        tb = traceback.format_exc()
        log(f"{tb.rstrip()}\ndflash-train: error: {type(exc).__name__}: {exc}", sys.stderr)
        events.emit("error", kind="setup", worker="main", message=str(exc), traceback=tb)
        events.emit("exit", code=1)
        events.release(_named_events(argv), warn=False)
        events.close()
        return 1
    if settings.world.main:
        events.release(settings.events or default_events_path(str(settings.out_dir)))
        log(f"dflash-train: events -> {events.path}")
    else:
        events.release(None)  # one event stream for the job: rank 0's
    try:
        return _run(settings, events, t0)
    finally:
        events.close()


def _check_devices(s: Settings) -> Settings:
    """After importing torch, before any heavy work: every listed GPU must exist.

    ``--device auto`` (the default) takes CUDA when torch sees it, else the CPU, but only when
    no GPU list was given: an explicit GPU list on a machine without CUDA is an error.
    """
    import torch

    if s.device == "cpu":
        return s
    if not torch.cuda.is_available():
        if s.device == "auto" and not s.gpus_given:
            log("dflash-train: no CUDA device visible: every worker runs on the CPU")
            return s.on("cpu")
        raise UsageError(
            f"no CUDA device is visible to torch {torch.__version__}; use --device cpu"
        )
    count = torch.cuda.device_count()
    missing = [i for i in s.topology.indices if i >= count]
    if missing:
        raise UsageError(
            f"GPU index {missing[0]} does not exist: {count} CUDA device(s) visible "
            f"(0-{count - 1}); check --target-gpus/--drafter-gpus or CUDA_VISIBLE_DEVICES"
        )
    return s.on("cuda")


def _run(s: Settings, events: EventLog, t0: float) -> int:
    try:
        from dflash_train.session import train

        return train(s, events, t0)
    except KeyboardInterrupt:
        events.emit("exit", code=130)
        return 130
    except DataError as exc:  # found only once tokenized or built: still a one-line usage error
        return _fail_usage(events, str(exc))
    except Exception as exc:  # setup failed in the main thread (a worker's error returns 1)
        tb = traceback.format_exc()
        log(tb.rstrip(), sys.stderr)
        log(f"dflash-train: error: {type(exc).__name__}: {exc}", sys.stderr)
        events.emit("error", kind="setup", worker="main", message=str(exc), traceback=tb)
        events.emit("exit", code=1)
        return 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Daemon threads stuck in a C call must not delay the exit of a failed run.
    os._exit(code)
