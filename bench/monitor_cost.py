#!/usr/bin/env python3
"""Two GPU monitors side by side in one run: CPU % of each one's whole process tree and its
peak RSS, each in a 120x40 pty, at several intervals, interleaved with repeats (A then B, then
B then A: ``in_turn``); plus one-shot times of ``nvidia-smi --query-gpu``, ``nvitop --once``
and ``dflash-tui status --json``.

Monitor A is dflash-tui of this checkout. Monitor B is ``baseline`` (dflash-tui at
``--baseline-rev``, a ``git worktree add --detach`` of it, imported through a folder of links
dflash_tui -> tui, dflash_train -> dflash, as bench/device_env.sh does) or ``nvitop``
(``nvitop`` on PATH, else ``python -m nvitop``). Both dflash-tuis are imported the same way
(PYTHONPATH), run as ``python -m dflash_tui.cli.main --interval S --run-root TMP`` on this
host with a config home of their own, and draw into a pty whose master a thread drains (a
full pty would block the app).

The CPU of a tree is the sum over its live processes of utime+stime+cutime+cstime from
/proc (a reaped child's time is in its parent's cutime/cstime, so children that exit within the
window are not lost), read at the start and the end of a window of --seconds after --warmup
seconds; RSS is the sum of VmRSS over the tree, read every 0.25 s, its peak kept. Figures are
medians over --repeats and, with --windows K, over the K windows one after the other in each
start (each window's own medians follow in a table of their own).

Without a real nvidia-smi (or with --stand-in) the stand-in of tests/fakes plays 8 H200s with
one process each (8 real ``sleep`` processes), utilisation, power and memory moving every
0.5 s as on a busy machine (the scenario file is rewritten; the fake re-reads it per call);
with --steady they stay as they are (what a drawing that skips the unchanged saves at best).
``--gpu nvml`` reads them through the fake ``pynvml`` (FAKE_NVML_RELOAD) as a host with
nvidia-ml-py does, so no Python stand-in starts twice a sample: the tree is the monitor and its
probe, wherever the probe runs (a process of its own in older trees, inside the app here).

    .venv/bin/python bench/monitor_cost.py [--b baseline|nvitop] [--seconds 25] [--repeats 2]
        [--windows 1] [--intervals 2,1,0.5] [--baseline-rev REV | --baseline-dir DIR] [--stand-in]
        [--gpu smi|nvml] [--gpus 8] [--topology T] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
COLS, ROWS = 120, 40
WORK = Path(tempfile.gettempdir()) / "dflash-monitor-cost"
QUERY = "index,name,memory.used,memory.total,utilization.gpu,temperature.gpu,power.draw"


# -- /proc: a process tree's CPU and memory --


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        ppid = int(text[text.rfind(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def tree(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def tree_ticks(root: int) -> int:
    """utime+stime+cutime+cstime over the live tree: its CPU so far, reaped children in."""
    total = 0
    for pid in tree(root):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        f = text[text.rfind(")") + 2 :].split()
        total += sum(int(x) for x in f[11:15])
    return total


def own_ticks(pid: int) -> int:
    """utime+stime of the process alone (the app's drawing, not its probe or children)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    f = text[text.rfind(")") + 2 :].split()
    return int(f[11]) + int(f[12])


def tree_rss(root: int) -> int:
    total = 0
    for pid in tree(root):
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError):
            continue
    return total


# -- the stand-in GPUs --


class StandIn:
    """8 H200s of the fake nvidia-smi, each held by a real sleeping process, their readings
    moving (a thread rewrites the scenario; the fake reads it on every call)."""

    def __init__(self, work: Path, gpus: int = 8, steady: bool = False, nvml: bool = False) -> None:
        sys.path[:0] = [str(ROOT / "tests")]
        from fakes.scenario import FAKES, NVML_FAKE_DIR, app, gpu, write_scenario

        self.gpu, self.app, self.write = gpu, app, write_scenario
        self.n, self.path = gpus, work / "scenario.json"
        self.sleepers = [
            subprocess.Popen(["sleep", "100000"], start_new_session=True) for _ in range(gpus)
        ]
        self.env = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}
        self.env["FAKE_SMI_SCENARIO"] = str(self.path)
        if nvml:  # read through the fake pynvml (re-reading the moving file), not by spawns
            path = os.pathsep.join(
                p for p in (str(NVML_FAKE_DIR), os.environ.get("PYTHONPATH")) if p
            )
            self.env |= {"PYTHONPATH": path, "FAKE_NVML_SCENARIO": str(self.path)}
            self.env["FAKE_NVML_RELOAD"] = "1"
        self.stop = threading.Event()
        self._write(0)
        self.thread = threading.Thread(target=self._move, daemon=True)
        if not steady:
            self.thread.start()

    def _write(self, tick: int) -> None:
        gpus, apps = [], []
        for i, p in enumerate(self.sleepers):
            wave = (tick + i * 3) % 10
            mem = 20_000 + 1_000 * wave
            power = f"{300 + 37 * wave + i:.2f}"
            g = self.gpu(i, util=90 + wave, mem_used=mem, fields={"power.draw": power})
            g["temperature.gpu"] = str(60 + wave // 3)
            gpus.append(g)
            apps.append(self.app(p.pid, gpu=i, used_mib=mem - 600))
        tmp = self.path.with_suffix(".tmp")
        self.write(tmp, gpus, apps)
        tmp.replace(self.path)  # atomic: the fake never reads half a file

    def _move(self) -> None:
        tick = 0
        while not self.stop.wait(0.5):
            tick += 1
            self._write(tick)

    def close(self) -> None:
        self.stop.set()
        for p in self.sleepers:
            p.kill()
            p.wait()


# -- the order of a repeat --

T = TypeVar("T")


def in_turn(items: Sequence[T], rep: int) -> list[T]:
    """``items`` in order in even repeats and reversed in odd ones (A, B, then B, A): over an
    even number of repeats each runs first as often as last, so what going first or second
    does to a figure (the machine still busy with the run before, caches the run before
    warmed) falls on both alike (over an odd number, the first order once more)."""
    return list(items) if rep % 2 == 0 else list(reversed(items))


# -- the monitors --


def link_farm(tree_dir: Path, farm: Path) -> Path:
    """dflash_tui -> tree/tui, dflash_train -> tree/dflash (pyproject's package-dir)."""
    farm.mkdir(parents=True, exist_ok=True)
    for name, folder in (("dflash_tui", "tui"), ("dflash_train", "dflash")):
        link = farm / name
        if link.is_symlink() or link.exists():
            link.unlink()
        target = (tree_dir / folder).resolve()  # a relative link would dangle in the farm
        if not (target / "__init__.py").is_file():
            raise SystemExit(f"{target}: no package there (--baseline-dir is the tree's root)")
        link.symlink_to(target)
    return farm


def baseline_tree(rev: str) -> Path:
    """A detached worktree of ``rev`` (made once, kept in WORK for later runs)."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    wt = WORK / f"baseline-{sha}"
    if not (wt / "tui").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), sha],
            check=True,
            capture_output=True,
        )
    return wt


class Monitor:
    """How to start one monitor at an interval: argv and environment."""

    def __init__(self, label: str, argv: Callable[[float], list[str]], env: dict[str, str]):
        self.label, self.argv, self.env = label, argv, env


def dflash_monitor(
    label: str,
    tree_dir: Path,
    home: Path,
    base_env: dict[str, str],
    args: list[str] | None = None,
    topology: str | None = None,
) -> Monitor:
    """``args`` follow ``--interval S`` (default: ``--run-root HOME/runs``), then
    ``--topology T`` when given."""
    farm = link_farm(tree_dir, home / "py")
    run_root = home / "runs"
    run_root.mkdir(parents=True, exist_ok=True)
    tail = ["--run-root", str(run_root)] if args is None else list(args)
    tail += ["--topology", topology] if topology else []
    # The links first: a PYTHONPATH already set (the device's wheels in /tmp/site) after them.
    path = os.pathsep.join(p for p in (str(farm), base_env.get("PYTHONPATH", "")) if p)
    env = dict(base_env, PYTHONPATH=path, XDG_CONFIG_HOME=str(home / "config"))
    env["XDG_STATE_HOME"] = str(home / "state")

    def argv(interval: float) -> list[str]:
        cli = [sys.executable, "-m", "dflash_tui.cli.main", "--interval", f"{interval:g}"]
        return [*cli, *tail]

    return Monitor(label, argv, env)


def nvitop_monitor(base_env: dict[str, str]) -> Monitor:
    exe = shutil.which("nvitop", path=base_env.get("PATH"))
    head = [exe] if exe else [sys.executable, "-m", "nvitop"]
    return Monitor(
        "nvitop", lambda s: [*head, "--monitor", "full", "--interval", f"{s:g}"], base_env
    )


def drain(fd: int, sink: list[int]) -> None:
    """Read the pty master until the child side closes (a full pty blocks the writer)."""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        sink[0] += len(data)


@contextlib.contextmanager
def running(mon: Monitor, interval: float) -> Iterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """The monitor in a 120x40 pty (its master drained by a thread, the bytes it wrote counted
    in the list), killed with its group on the way out."""
    with running_pty(mon, interval) as (p, written, _master):
        yield p, written


@contextlib.contextmanager
def running_pty(
    mon: Monitor, interval: float
) -> Iterator[tuple[subprocess.Popen[bytes], list[int], int]]:
    """``running``, and the pty's master: what is written there the monitor reads as keys."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = dict(mon.env, TERM="xterm-256color", LANG="C.UTF-8", COLUMNS=str(COLS), LINES=str(ROWS))
    cwd = WORK / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    p = subprocess.Popen(
        mon.argv(interval),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    written = [0]
    reader = threading.Thread(target=drain, args=(master, written), daemon=True)
    reader.start()
    try:
        yield p, written, master
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        os.close(master)
        reader.join(2)


def measure(
    mon: Monitor,
    interval: float,
    seconds: float,
    warmup: float,
    others: dict[str, int] | None = None,
    keys: Callable[[int], None] | None = None,
    windows: int = 1,
) -> list[dict[str, float]]:
    """``windows`` windows one after the other in one start of the monitor, after one
    warm-up (a long warm-up then costs its time once), each CPU % of a core and peak RSS MiB
    of the monitor's whole tree; ``others`` (name: root PID, e.g. an sshd serving the monitor)
    get ``NAME_cpu_pct`` and ``NAME_ms_per_sample`` of their trees over the same window.
    ``keys``, given the pty's master, presses keys after the warm-up, before the first
    window."""
    others = others or {}
    out = []
    with running_pty(mon, interval) as (p, written, master):
        started = time.time()
        time.sleep(warmup)
        if p.poll() is not None:
            raise SystemExit(f"{mon.label} exited with {p.returncode} during the warm-up")
        before_keys = tree_rss(p.pid)
        if keys is not None:
            keys(master)
            if p.poll() is not None:
                raise SystemExit(f"{mon.label} exited with {p.returncode} at its keys")
        for w in range(windows):
            w0, wall = written[0], time.time()
            r = _window(mon.label, p, interval, seconds, others)
            # Where the window lies in the monitor's life (the first minute is not the rest),
            # keys and their waits included; its wall-clock span: what the monitor logged in
            # it (bench/hosts_cost.py).
            start = {"window": w + 1, "window_start_s": wall - started}
            start |= {"wall_start": wall, "wall_end": time.time()}
            # bytes_out: what the monitor wrote to its terminal in this window alone.
            rss = {"rss_before_keys_mib": before_keys / 2**20}
            out.append(r | start | rss | {"bytes_out": float(written[0] - w0)})
    return out


def _window(
    label: str,
    p: subprocess.Popen[bytes],
    interval: float,
    seconds: float,
    others: dict[str, int],
) -> dict[str, float]:
    """The monitor's (and ``others``') CPU over ``seconds`` from now, and its peak RSS."""
    x0 = {name: tree_ticks(pid) for name, pid in others.items()}
    t0, c0, o0, peak = time.monotonic(), tree_ticks(p.pid), own_ticks(p.pid), 0
    while time.monotonic() - t0 < seconds:
        peak = max(peak, tree_rss(p.pid))
        time.sleep(0.25)
    c1, o1, t1 = tree_ticks(p.pid), own_ticks(p.pid), time.monotonic()
    x1 = {name: tree_ticks(pid) for name, pid in others.items()}
    if p.poll() is not None:
        raise SystemExit(f"{label} exited with {p.returncode} while measured")
    cpu_s, own_s = (c1 - c0) / CLK_TCK, (o1 - o0) / CLK_TCK
    out = {}
    for name in others:
        x_s = (x1[name] - x0[name]) / CLK_TCK
        out[f"{name}_cpu_pct"] = 100.0 * x_s / (t1 - t0)
        out[f"{name}_ms_per_sample"] = 1000.0 * x_s * interval / (t1 - t0)
    return out | {
        "own_pct": 100.0 * own_s / (t1 - t0),
        "own_ms_per_sample": 1000.0 * own_s * interval / (t1 - t0),
        "cpu_pct": 100.0 * cpu_s / (t1 - t0),
        "ms_per_sample": 1000.0 * cpu_s * interval / (t1 - t0),
        "rss_mib": peak / 2**20,
    }


# -- one-shot commands --


def oneshot(argv: list[str], env: dict[str, str], n: int = 5) -> float | None:
    """Median wall ms of ``n`` runs; None when the command is not there or fails."""
    times = []
    for _ in range(n):
        t = time.monotonic()
        try:
            r = subprocess.run(argv, env=env, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode not in (0, 1):  # status exits 1 on an error finding
            return None
        times.append(1000.0 * (time.monotonic() - t))
    return statistics.median(times)


def oneshots(a: Monitor, b: Monitor, env: dict[str, str]) -> list[tuple[str, float | None]]:
    out = []
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi:
        out.append(
            (
                f"nvidia-smi --query-gpu={QUERY} --format=csv",
                oneshot([smi, f"--query-gpu={QUERY}", "--format=csv"], env),
            )
        )
    nv = shutil.which("nvitop", path=env.get("PATH"))
    if nv or b.label == "nvitop":
        head = [nv] if nv else [sys.executable, "-m", "nvitop"]
        out.append(("nvitop --once", oneshot([*head, "--once"], env)))
    for mon in (a, b):
        if mon.label == "nvitop":
            continue
        argv = mon.argv(1.0)
        cli = [*argv[:3], "status", "--json", *argv[5:]]  # python -m dflash_tui.cli.main
        out.append((f"dflash-tui status --json ({mon.label})", oneshot(cli, mon.env)))
    return out


# -- the run --


def run(args: argparse.Namespace) -> dict:
    WORK.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="run-", dir=WORK))
    real_smi = shutil.which("nvidia-smi") and not args.stand_in
    stand_in = None if real_smi else StandIn(home, args.gpus, args.steady, args.gpu == "nvml")
    env = dict(os.environ)
    if stand_in is not None:
        env.update(stand_in.env)
    try:
        a = dflash_monitor("this tree", ROOT, home / "a", env, topology=args.topology)
        if args.b == "nvitop":
            b = nvitop_monitor(env)
        else:
            tree_dir = args.baseline_dir or baseline_tree(args.baseline_rev)
            name = args.baseline_rev or tree_dir.name
            b = dflash_monitor(
                f"baseline {name}", tree_dir, home / "b", env, topology=args.topology
            )
        results: dict[str, dict[str, list[dict[str, float]]]] = {}
        intervals = [float(s) for s in args.intervals.split(",")]
        for rep in range(args.repeats):
            for interval in intervals:
                for mon in in_turn((a, b), rep):  # A, B, then B, A
                    rows = measure(mon, interval, args.seconds, args.warmup, windows=args.windows)
                    results.setdefault(mon.label, {}).setdefault(f"{interval:g}", []).extend(rows)
                    for w, r in enumerate(rows):
                        print(
                            f"  rep {rep + 1}.{w + 1} {interval:g} s {mon.label}: "
                            f"{r['cpu_pct']:.2f} % {r['ms_per_sample']:.1f} ms/sample, "
                            f"own process {r['own_ms_per_sample']:.1f} ms/sample, "
                            f"{r['rss_mib']:.0f} MiB",
                            flush=True,
                        )
        shots = oneshots(a, b, env)
    finally:
        if stand_in is not None:
            stand_in.close()
    return {
        "a": a.label,
        "b": b.label,
        "intervals": intervals,
        "results": results,
        "oneshots": shots,
        "stand_in": stand_in is not None,
        "gpu": args.gpu,
        "args": vars(args),
    }


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _own(rows: list[dict[str, float]]) -> str:
    return f"{med(rows, 'own_ms_per_sample'):.1f}"


def _own_ratio(ra: list[dict[str, float]], rb: list[dict[str, float]]) -> str:
    b = med(rb, "own_ms_per_sample")
    return f"{med(ra, 'own_ms_per_sample') / b:.2f}x" if b else "-"


def report(doc: dict) -> str:
    """Medians as a Markdown table. "own": the monitor's main process alone (without its
    probe and the tools that calls), which is where the drawing happens."""
    a, b, res = doc["a"], doc["b"], doc["results"]
    lines = [
        f"| interval | {b} CPU % | {a} CPU % | ratio A/B | {b} ms/sample | {a} ms/sample "
        f"| {b} own ms/sample | {a} own ms/sample | own ratio A/B |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rss_a, rss_b = [], []
    for s in doc["intervals"]:
        ra, rb = res[a][f"{s:g}"], res[b][f"{s:g}"]
        ca, cb = med(ra, "cpu_pct"), med(rb, "cpu_pct")
        lines.append(
            f"| {s:g} s | {cb:.2f} | {ca:.2f} | {ca / cb:.2f}x | "
            f"{med(rb, 'ms_per_sample'):.1f} | {med(ra, 'ms_per_sample'):.1f} | "
            f"{_own(rb)} | {_own(ra)} | {_own_ratio(ra, rb)} |"
        )
        rss_a += [r["rss_mib"] for r in ra]
        rss_b += [r["rss_mib"] for r in rb]
    ma, mb = statistics.median(rss_a), statistics.median(rss_b)
    lines.append(f"| peak RSS (MiB) | {mb:.0f} | {ma:.0f} | {ma / mb:.2f}x | | | | | |")
    lines.append("")
    if doc["args"].get("windows", 1) > 1:
        lines += [*_by_window(doc), ""]
    for what, ms in doc["oneshots"]:
        lines.append(
            f"one-shot {what}: " + ("not run" if ms is None else f"{ms:.0f} ms (median of 5)")
        )
    steady = ", readings steady" if doc["args"].get("steady") else ", readings moving"
    tool = "the fake pynvml" if doc.get("gpu") == "nvml" else "the stand-in nvidia-smi"
    n = doc["args"].get("gpus", 8)
    stand_in = f"{tool}, {n} H200s, {n} processes" + steady
    lines.append("GPUs: " + (stand_in if doc["stand_in"] else "real"))
    return "\n".join(lines)


def _by_window(doc: dict) -> list[str]:
    """With several windows a start, each window's place on its own (medians over the
    repeats): the table above mixes the app's first minute with what comes after it."""
    a, b, res = doc["a"], doc["b"], doc["results"]
    lines = [
        f"| interval | window (s after start) | {b} ms/sample | {a} ms/sample | ratio A/B |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in doc["intervals"]:
        ra, rb = res[a][f"{s:g}"], res[b][f"{s:g}"]
        for w in sorted({r["window"] for r in ra}):
            wa = [r for r in ra if r["window"] == w]
            wb = [r for r in rb if r["window"] == w]
            start = wa[0]["window_start_s"]
            ma, mb = med(wa, "ms_per_sample"), med(wb, "ms_per_sample")
            span = f"{start:.0f}-{start + doc['args']['seconds']:.0f}"
            ratio = f"{ma / mb:.2f}x" if mb else "-"
            lines.append(f"| {s:g} s | {w} ({span}) | {mb:.1f} | {ma:.1f} | {ratio} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--b", choices=("baseline", "nvitop"), default="baseline")
    ap.add_argument("--baseline-rev", help="the revision --b baseline runs (a git worktree of it)")
    ap.add_argument(
        "--baseline-dir",
        type=Path,
        help="the baseline's tree, already there (e.g. `git archive REV tui dflash | tar -x`)",
    )
    ap.add_argument("--seconds", type=float, default=25.0, help="one window (default 25)")
    ap.add_argument("--warmup", type=float, default=6.0, help="seconds before a window")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--windows",
        type=int,
        default=1,
        help="windows one after the other in each start of a monitor (default 1): with a long"
        " --warmup (65: past the first minute, when label chips count whole minutes) the"
        " warm-up is paid once a start",
    )
    ap.add_argument("--intervals", default="2,1,0.5")
    ap.add_argument(
        "--stand-in", action="store_true", help="the fake nvidia-smi even with a real one"
    )
    ap.add_argument(
        "--gpu",
        choices=("smi", "nvml"),
        default="smi",
        help="how the stand-in is read: the fake nvidia-smi (two Python starts a sample, in"
        " the tree) or the fake pynvml inside the probe (the tree is then the monitor alone)",
    )
    ap.add_argument(
        "--steady", action="store_true", help="the stand-in's readings do not move (best case)"
    )
    ap.add_argument(
        "--gpus",
        type=int,
        default=8,
        help="the stand-in's GPUs (default 8; 1: as the one-card GPU host runs under the default"
        " 8-panel topology, seven panels saying the GPU is missing)",
    )
    ap.add_argument(
        "--topology",
        help="the dflash-tuis' --topology (default theirs: 0-4:5-7, 8 panels; `0:` on a 1-GPU "
        "machine draws its one GPU only, as nvitop does)",
    )
    ap.add_argument("--out", type=Path, help="write the figures as JSON and Markdown here")
    args = ap.parse_args()
    if args.windows < 1:
        ap.error("--windows: at least 1")
    if args.b == "baseline" and args.baseline_rev is None and args.baseline_dir is None:
        ap.error("--b baseline needs the tree to compare with: --baseline-rev or --baseline-dir")
    doc = run(args)
    text = report(doc)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        topo = "".join(c if c.isalnum() else "-" for c in args.topology or "")
        name = f"monitor_cost_{args.b}" + (f"_topology_{topo}" if args.topology else "")
        (args.out / f"{name}.json").write_text(json.dumps(doc, indent=1, default=str))
        (args.out / f"{name}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
