#!/usr/bin/env python3
"""What one probe sample costs in CPU with a big process table: this checkout's probe beside
another revision's (``--old REV``, or its files in ``--old-dir``), in one run.

Starts --procs real ``sleep`` processes in a process group of their own, then runs each probe
the way the transports do (``python3 - --interval=S``, source on stdin) with the stand-in
nvidia-smi of tests/fakes first on PATH (8 GPUs), and reads the probe process's own
utime+stime from /proc/PID/stat after each line it prints. The clock tick is 10 ms, so the CPU
is summed over blocks of --block samples and divided; the figure is the median per-sample CPU
over the blocks, after the first sample (which reads everything). The sleepers are killed by
their group at the end.

    .venv/bin/python bench/probe_cost.py [--procs 1000] [--samples 40] [--block 5] --old REV
        [--old-dir DIR] [--gpu stand-in|none|real]
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from fakes.scenario import FAKES, SCENARIOS  # noqa: E402

OLD_PARTS = ("gpu.py", "tail.py", "files.py")  # before bundle.py named them
PARTS_BLOCK = re.compile(rb"^# >>> parts.*?^# <<< parts\n", re.MULTILINE | re.DOTALL)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def source_at(commit: str | None, tree: Path | None = None) -> bytes:
    """The probe program as the bundle builds it, from the work tree, from ``tree`` (a copy of
    another revision's files) or from ``commit``."""

    def read(name: str) -> bytes:
        rel = f"tui/core/probe/{name}"
        if commit is None or tree is not None:
            return ((tree or ROOT) / rel).read_bytes()
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{rel}"], capture_output=True, check=True
        ).stdout

    try:  # the parts, in bundle.py's order at that commit
        bundle = read("bundle.py").decode()
        parts = tuple(
            re.findall(r'"(\w+\.py)"', bundle.split("PROBE_PARTS = (", 1)[1].split(")")[0])
        )
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError):
        parts = OLD_PARTS
    main = PARTS_BLOCK.sub(b"", read("main.py"))
    return b"\n".join(PARTS_BLOCK.sub(b"", read(p)) for p in parts) + b"\n" + main


def start_sleepers(n: int) -> int:
    """``n`` sleeping processes in one new process group (a shell's); returns the group id."""
    loop = f"i=0; while [ $i -lt {n} ]; do sleep 3600 & i=$((i+1)); done; wait"
    return subprocess.Popen(["sh", "-c", loop], start_new_session=True).pid


def cpu_ticks(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    f = text[text.rfind(")") + 2 :].split()
    return int(f[11]) + int(f[12])  # utime + stime (the probe's own, not its children's)


def measure(
    source: bytes, samples: int, block: int, interval: float, env: dict, flags: list[str]
) -> list[float]:
    """Per-sample CPU ms of one probe, one value per block of samples after the first."""
    p = subprocess.Popen(
        [sys.executable, "-", f"--interval={interval}", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(source)
    p.stdin.close()
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    ticks = []
    try:
        for _ in range(samples + 1):
            if not sel.select(60):
                raise SystemExit("the probe printed nothing for 60 s")
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"the probe stopped: {p.stderr.read()[-600:]!r}")
            ticks.append(cpu_ticks(p.pid))  # the probe sleeps now, until its next sample
    finally:
        p.kill()
        p.wait()
    per = []
    for i in range(1, len(ticks) - block + 1, block):  # from the end of the first sample
        per.append((ticks[i + block - 1] - ticks[i - 1]) * 1000.0 / CLK_TCK / block)
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--interval", type=float, default=0.3)
    ap.add_argument("--old", help="the revision to compare with (its name in the table)")
    ap.add_argument(
        "--old-dir",
        type=Path,
        help="that commit's files, already there (`git archive REV tui | tar -x`; no .git)",
    )
    ap.add_argument(
        "--gpu",
        choices=("stand-in", "none", "real"),
        default="stand-in",
        help="stand-in: tests/fakes' nvidia-smi (two runs of it a sample, NVML off); none: no "
        "GPU tool at all (the process table and the rest alone); real: this machine's NVML or "
        "nvidia-smi, as the probe finds them (the device machine)",
    )
    args = ap.parse_args()
    if args.old is None and args.old_dir is None:
        ap.error("name the probe to compare with: --old REV or --old-dir DIR")
    old = args.old or str(args.old_dir)
    env, flags = dict(os.environ), ["--no-nvml"]
    if args.gpu == "stand-in":
        env["PATH"] = f"{FAKES}{os.pathsep}{os.environ['PATH']}"
        env["FAKE_SMI_SCENARIO"] = str(SCENARIOS / "seed-incident.json")
    elif args.gpu == "none" and shutil.which("nvidia-smi"):
        raise SystemExit("--gpu none: an nvidia-smi is on PATH here")
    elif args.gpu == "real":
        flags = []
    pgid = start_sleepers(args.procs)
    try:
        time.sleep(3.0)  # every sleeper started
        nproc = sum(1 for n in os.listdir("/proc") if n.isdigit())
        print(f"processes in /proc: {nproc} ({args.procs} sleepers); GPU tool: {args.gpu}")
        rows = []
        for label, source in (
            (old, source_at(args.old, args.old_dir)),
            ("this checkout", source_at(None)),
        ):
            per = measure(source, args.samples, args.block, args.interval, env, flags)
            rows.append((label, statistics.median(per), min(per), max(per)))
        print("| probe | CPU ms per sample (median) | min | max |")
        print("| --- | --- | --- | --- |")
        for label, med, lo, hi in rows:
            print(f"| {label} | {med:.1f} | {lo:.1f} | {hi:.1f} |")
        print(f"ratio (this / {old}): {rows[1][1] / rows[0][1]:.2f}")
    finally:
        os.killpg(pgid, signal.SIGKILL)
        os.waitpid(pgid, 0)  # the shell; its sleepers are reaped by init


if __name__ == "__main__":
    main()
