#!/usr/bin/env python3
"""dflash-tui probe: one JSON line per sample of GPUs, processes, log tails and the run directory.

Standard library only, python3 >= 3.8 (3.6 and 3.7 work too: no __future__ import, annotations
use builtins only, so keep it that way). The supervisor sends this file over stdin
(`python3 - --once ...`) to wherever the GPUs are. The output is specified in docs/internals.md
and parsed by tui/core/base/snapshot.py. Every section is guarded: bad tool output, vanishing
processes or unreadable files become entries in `errors`, never a crash or a hang.
"""

import argparse
import json
import os
import queue
import shutil
import socket
import sys
import threading
import time

# >>> parts: bundle.probe_source() sends the parts' code ahead and drops this block
try:  # imported as dflash_tui.core.probe.main
    from dflash_tui.core.probe.files import *
    from dflash_tui.core.probe.gpu import *
    from dflash_tui.core.probe.machine import *
    from dflash_tui.core.probe.nvhealth import *
    from dflash_tui.core.probe.procs import *
    from dflash_tui.core.probe.tail import *
except ImportError:  # run as a file: python3 tui/core/probe/main.py
    # mypy checks the package, where these plain-file names do not resolve
    from files import *  # type: ignore[import-not-found]
    from gpu import *  # type: ignore[import-not-found]
    from machine import *  # type: ignore[import-not-found]
    from nvhealth import *  # type: ignore[import-not-found]
    from procs import *  # type: ignore[import-not-found]
    from tail import *  # type: ignore[import-not-found]
# <<< parts

FORMAT = 1
MAX_ERRORS = 50


class Call:
    """One call handed to a CallThread: ``is_alive()`` while it has not returned (a call that
    timed out and is still stuck in the driver)."""

    def __init__(self, fn):
        self.fn, self.done, self.result, self.exc = fn, threading.Event(), None, None

    def run(self):
        try:
            self.result = self.fn()
        except Exception as exc:
            self.exc = exc
        finally:
            self.done.set()

    def is_alive(self):
        return not self.done.is_set()


class CallThread:
    """One daemon thread that makes the probe's NVML calls, each awaited up to a timeout: a
    hung driver cannot hang the probe. One thread for all of them, not one per call: starting
    and joining a thread costs ~70 µs of CPU, and NVML's first calls in a new thread cost more
    than in one it has served (bench/nvml_calls.py on the H200). A call that timed out keeps
    the thread; the probe makes no other call while it is stuck (``nvml_stuck``)."""

    def __init__(self):
        self.jobs = None

    def run(self, fn, timeout: float):
        """The Call of ``fn``, after up to ``timeout``: it finished unless ``is_alive()``
        (read its result and exception only then)."""
        if self.jobs is None:
            self.jobs = queue.Queue()
            threading.Thread(target=self._serve, args=(self.jobs,), daemon=True).start()
        call = Call(fn)
        self.jobs.put(call)
        call.done.wait(timeout)
        return call

    @staticmethod
    def _serve(jobs):
        while True:
            call = jobs.get()
            if call is None:
                return
            call.run()

    def close(self):
        """The thread ends once it has served what it was given (a stuck call last)."""
        if self.jobs is not None:
            self.jobs.put(None)
            self.jobs = None


def boot_time():
    try:
        for line in read_bytes("/proc/stat").decode("ascii", "replace").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class Probe:
    """State kept between samples in --interval mode (log offsets, CPU ticks, tool choice)."""

    def __init__(self, args):
        self.args, self.samples = args, 0
        self.procs = Procs()
        self.rows = RowDelta(bool(args.delta) and not args.once)
        self.steps = StepReader()
        self.tails = {}
        self.resume = resume_tokens(args.resume)  # where the previous probe's tails stopped
        self.nvml, self.nvml_stuck = None, None  # an NVML call that hung (Call)
        self.calls = CallThread()
        if not args.no_nvml:  # absent module, no driver, a hung driver: use nvidia-smi
            self.nvml = self.nvml_call(Nvml, args.smi_timeout)[0]
        smi = None if self.nvml else shutil.which("nvidia-smi")
        self.smi = Smi(smi, args.smi_timeout) if smi else None
        self.kernel = KernelLog()  # kept open: each sample reads the records new since the last
        self.health = None
        if self.nvml is not None:  # Xid events are queued only for a watcher: the set stays open
            self.health = self.nvml_call(lambda: NvHealth(self.nvml.nv, not args.once), 2.0)[0]

    def sample(self) -> dict:
        errors = []  # type: list[str]
        out = {"format": FORMAT, "time": time.time(), "host": socket.gethostname(),
               "probe_mode": "python", "clk_tck": self.procs.clk_tck,
               "interval": None if self.args.once else self.args.interval}  # fmt: skip
        out["boot_time"] = guard(boot_time, errors, "boot time")
        tel = guard(lambda: self.gpus(errors), errors, "GPU telemetry")
        out["telemetry"], out["gpus"], out["gpu_procs"] = tel or ({"source": "none"}, [], [])
        out["run"] = guard(
            lambda: read_run_dir(self.args.run_root, errors), errors, "run directory"
        )
        out["procs"] = guard(lambda: self.read_procs(out, errors), errors, "process table") or []
        out["logs"] = guard(lambda: self.logs(out["run"]), errors, "logs") or []
        out["last_step"] = guard(lambda: last_step(out["run"], errors), errors, "event stream")
        if not self.args.once:  # the History tab's steps: only a stream has a "since last"
            out["steps"] = guard(lambda: self.steps.read(out["run"], errors), errors, "steps")
        out["supervisor"] = guard(
            lambda: read_supervisor(self.args.run_root, errors), errors, "supervisor record"
        )
        out["machine"] = guard(lambda: self.machine(out, errors), errors, "machine")
        out["workers"] = guard(lambda: last_workers(out["run"], errors), errors, "workers")
        if len(errors) > MAX_ERRORS:
            errors[MAX_ERRORS:] = ["... and %d more errors" % (len(errors) - MAX_ERRORS)]
        out["errors"] = errors
        self.samples += 1
        return out

    def close(self) -> None:
        """Release what is held between samples (log tails, the kernel log, NVML's event set
        and its init): a probe that runs inside another program (the app, ``status``,
        ``supervise`` on this machine) must not leave them behind. Not NVML while a call of
        this probe is stuck in it."""
        for tail in self.tails.values():
            tail.close()
        self.tails.clear()
        self.kernel.close()
        if self.nvml is not None and not self.wedged():
            if self.health is not None:
                self.health.close()
            try:
                self.nvml.nv.nvmlShutdown()  # one per nvmlInit: NVML counts them
            except Exception:
                pass
            self.nvml = self.health = None
        self.calls.close()

    def dumps(self, out: dict) -> str:
        """The sample as one JSON line; the process table last, encoded by RowDelta (with
        --delta, only the rows changed since the previous line: RowDelta's docstring)."""
        rows = out.pop("procs")
        head = json.dumps(out, default=str)
        return head[:-1] + ", " + self.rows.encode(rows) + "}"

    def read_procs(self, out: dict, errors: list) -> list:
        """The table; the GPUs' processes and the runs' groups are read every sample."""
        run = out["run"] or {}
        groups = set(run.get("earlier_pgids") or ())
        groups.update(x for x in (run.get("pgid"), run.get("pid")) if x)
        watch = set(p.get("pid") for p in out["gpu_procs"])
        return self.procs.read(errors, watch, groups)

    def machine(self, out: dict, errors: list) -> dict:
        root = expand_home(self.args.run_root) if self.args.run_root else None  # as control.sh
        m = read_machine(out["run"], root, self.kernel, out["boot_time"], errors)
        m["nvml"] = None
        if self.health is not None and not self.wedged():
            res, exc, _ = self.nvml_call(lambda: self.health.read(errors), self.args.smi_timeout)
            if exc is not None:
                errors.append("NVML health failed: %s: %s" % (type(exc).__name__, exc))
            m["nvml"] = res
        return m

    def gpus(self, errors: list):
        t0, source = time.monotonic(), "none"
        if self.nvml is not None:
            gpus, procs, error = self.nvml_read(errors)
            source = "nvidia-smi" if self.nvml_stuck is not None else "nvml"
        elif self.smi is not None:
            gpus, procs, error = self.smi.read(errors)
            source = "nvidia-smi"
        else:
            gpus, procs, error = None, [], NO_TOOLS
        ms = round((time.monotonic() - t0) * 1000.0, 1)
        tel = {"source": source if gpus is not None else "none", "error": error, "elapsed_ms": ms}
        return tel, gpus or [], procs

    def nvml_read(self, errors: list):
        if self.wedged():
            return self.smi_instead(errors, "NVML did not answer (an earlier call is still stuck)")
        self.nvml_stuck = None  # a stuck call that has since returned: NVML is usable again
        res, exc, stuck = self.nvml_call(lambda: self.nvml.read(errors), self.args.smi_timeout)
        if stuck:
            return self.smi_instead(
                errors, "NVML did not answer within %gs" % self.args.smi_timeout
            )
        if exc is not None:
            return None, [], "NVML failed: %s: %s" % (type(exc).__name__, exc)
        return res

    def wedged(self) -> bool:
        """Whether an NVML call of this probe is still stuck in the driver: nothing may call
        NVML then (close() neither)."""
        return self.nvml_stuck is not None and self.nvml_stuck.is_alive()

    def nvml_call(self, fn, timeout: float):
        """(result, exc, stuck): ``fn`` made by the NVML thread; a call not back within
        ``timeout`` is remembered as stuck and gives (None, None, True)."""
        call = self.calls.run(fn, timeout)
        if call.is_alive():
            self.nvml_stuck = call
            return None, None, True
        return call.result, call.exc, False  # read after: it may have returned since run()

    def smi_instead(self, errors: list, why: str):
        """While NVML is stuck, nvidia-smi (if there is one) still gives readings."""
        smi = shutil.which("nvidia-smi") if self.smi is None else None
        if smi:
            self.smi = Smi(smi, self.args.smi_timeout)
        if self.smi is None:
            return None, [], why
        gpus, procs, error = self.smi.read(errors)
        return gpus, procs, why + "; read by nvidia-smi" + ("; " + error if error else "")

    def logs(self, run) -> list:
        paths = [(run["log_path"], True)] if run else []
        paths += [(p, False) for p in self.args.log or []]
        out, done = [], set()
        # The run's own log is followed through the job's stdout too (a moved output.log).
        leader = (run["pid"], run["start_ticks"]) if run and run.get("pid") else None
        for path, is_run in paths:
            if path in done:
                continue
            done.add(path)
            if path not in self.tails:  # a log first seen after the first sample is all new
                self.tails[path] = TailReader(
                    path,
                    tail_first=self.samples == 0,
                    resume=self.resume.pop(path, None),
                    real=expand_home(path),
                )
            out.append(
                self.tails[path].sample(
                    self.args.tail_bytes,
                    self.args.max_lines,
                    is_run,
                    leader if is_run and run.get("start_ticks") is not None else None,
                )
            )
        for path in [p for p in self.tails if p not in done]:  # an earlier run's log
            self.tails.pop(path).close()
        return out


def guard(fn, errors: list, what: str):
    """A bug in one section must not cost the whole sample."""
    try:
        return fn()
    except Exception as exc:
        errors.append("probe: %s failed: %s: %s" % (what, type(exc).__name__, exc))
        return None


def resume_tokens(values: list) -> dict:
    """``PATH=TOKEN`` values (the token has no ``=``) -> {path: token}."""
    out = {}
    for v in values or []:
        path, sep, token = v.rpartition("=")
        if sep and path:
            out[path] = token
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="probe", allow_abbrev=False)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true")
    mode.add_argument("--interval", type=float, default=None)
    ap.add_argument("--log", action="append", default=[])
    ap.add_argument("--run-root", default=None)
    ap.add_argument("--smi-timeout", type=float, default=5.0)
    ap.add_argument("--no-nvml", action="store_true")
    ap.add_argument("--tail-bytes", type=int, default=65536)
    ap.add_argument("--max-lines", type=int, default=5000)
    ap.add_argument("--delta", action="store_true")  # process table as change lists
    ap.add_argument("--resume", action="append", default=[], metavar="PATH=TOKEN")
    return ap.parse_args(argv)


def probe_main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    probe = Probe(args)
    interval = max(args.interval, 0.05) if args.interval and not args.once else None
    due = time.monotonic()
    try:
        while True:
            sys.stdout.write(probe.dumps(probe.sample()) + "\n")
            sys.stdout.flush()
            if interval is None:
                return 0
            due += interval
            now = time.monotonic()
            if due < now:  # fell behind (a slow sample): restart the schedule, no burst
                due = now
            time.sleep(due - now)
    except (BrokenPipeError, KeyboardInterrupt):
        # The reader went away (its pipe or SSH channel closed): leave quietly.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(probe_main())
