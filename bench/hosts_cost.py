#!/usr/bin/env python3
"""What the app costs watching 8 hosts x 8 GPUs over SSH at 1 Hz (the goal: <= 5 % of a
core): the real loopback OpenSSH sshd of tests/integration (root, /usr/sbin/sshd), a config
with 8 ``[[hosts]]`` that all reach it (labels h1..h8, one address, a run root each), the app
in a 120x40 pty whose master a thread drains, as bench/monitor_cost.py runs it (its helpers,
imported).

Inside the sshd's sessions the GPUs are monitor_cost's stand-in: 8 H200s with a real process
each, their readings moving every 0.5 s. ``--gpu nvml`` (default): the fake pynvml, re-reading
the moving scenario (FAKE_NVML_RELOAD), as a host with nvidia-ml-py reads its GPUs in the
probe; ``--gpu smi``: the fake nvidia-smi first on PATH, two Python starts a sample on each
host, which on a 2-core machine takes well over a core for 8 hosts and starves the app
(it then draws fewer samples and looks cheaper than it is).

Measured over windows of --seconds after --warmup: CPU % of a core of the app's process tree
(the client: the app alone, its probes run on the hosts) and of the sshd's tree (the 8 hosts'
side: sshd sessions, probes, the GPU tool), medians and ranges over --repeats; with
--baseline-dir the same against that tree (another revision's), interleaved.

    .venv/bin/python bench/hosts_cost.py [--hosts 8] [--interval 1] [--seconds 20]
        [--warmup 12] [--repeats 3] [--gpu nvml|smi] [--baseline-dir DIR]
        [--profile app.svg [--gil]]   # py-spy (pip install py-spy) on the app instead
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from fakes.scenario import FAKES, NVML_FAKE_DIR  # noqa: E402
from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable  # noqa: E402
from monitor_cost import (  # noqa: E402
    WORK,
    Monitor,
    StandIn,
    dflash_monitor,
    measure,
    running,
    tree,
)


def probes(sshd_pid: int) -> int:
    """Python probes streaming under the sshd now (one per connected host)."""
    n = 0
    for pid in tree(sshd_pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        n += argv[0].rsplit(b"/", 1)[-1].startswith(b"python") and b"--interval" in b" ".join(argv)
    return n


class ProbeCount:
    """The most probes seen under the sshd during a window (every host must be sampled, or
    the app's figure is that of fewer hosts)."""

    def __init__(self, sshd_pid: int) -> None:
        self.pid, self.most, self.stop = sshd_pid, 0, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.wait(2.0):
            self.most = max(self.most, probes(self.pid))

    def close(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.most


def write_config(path: Path, hosts: int, runs: Path) -> Path:
    """``hosts`` entries on the one sshd alias, each with its own label and run root."""
    lines = []
    for i in range(1, hosts + 1):
        root = runs / f"h{i}"
        root.mkdir(parents=True, exist_ok=True)
        lines += ["[[hosts]]", f'label = "h{i}"', f'address = "{ALIAS}"', "[hosts.run]"]
        lines += [f'run_root = "{root}"', ""]
    path.write_text("\n".join(lines))
    return path


def session_env(stand_in: StandIn, gpu: str) -> dict[str, str]:
    """What the sshd's sessions see: the stand-in's scenario, by nvidia-smi or NVML."""
    env = {"FAKE_SMI_SCENARIO": str(stand_in.path)}
    if gpu == "nvml":
        env |= {"PYTHONPATH": str(NVML_FAKE_DIR), "FAKE_NVML_SCENARIO": str(stand_in.path)}
        env["FAKE_NVML_RELOAD"] = "1"
    return env


def monitors(args: argparse.Namespace, home: Path, server: LoopbackSshd) -> list[Monitor]:
    env = dict(os.environ) | server.env
    config = write_config(home / "hosts.toml", args.hosts, home / "runs")
    cli = ["--config", str(config)]
    out = [dflash_monitor("this tree", ROOT, home / "a", env, cli)]
    if args.baseline_dir:
        out.append(dflash_monitor("baseline", args.baseline_dir, home / "b", env, cli))
    return out


def profile(mon: Monitor, args: argparse.Namespace) -> None:
    """py-spy (on PATH or beside this python) records the app for one window after the
    warm-up: a flame graph in --profile, or the raw collapsed stacks when it ends in .txt."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    fmt = "raw" if args.profile.suffix == ".txt" else "flamegraph"
    with running(mon, args.interval) as (p, _):
        time.sleep(args.warmup)
        cmd = [spy, "record", "--pid", str(p.pid), "--duration", f"{args.seconds:.0f}"]
        cmd += ["--rate", "200", "--format", fmt, "--output", str(args.profile)]
        cmd += ["--gil"] if args.gil else []
        subprocess.run(cmd, check=True)


def run(args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    WORK.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="hosts-", dir=WORK))
    stand_in = StandIn(home)
    server = LoopbackSshd(
        home / "sshd", path_prefix=str(FAKES), session_env=session_env(stand_in, args.gpu)
    )
    server.start()
    results: dict[str, list[dict[str, float]]] = {}
    try:
        assert server.proc is not None
        mons, sshd = monitors(args, home, server), {"sshd": server.proc.pid}
        if args.profile:
            profile(mons[0], args)
            return results
        for rep in range(args.repeats):
            for mon in mons:  # interleaved: A, B, A, B, ...
                count = ProbeCount(server.proc.pid)
                r = measure(mon, args.interval, args.seconds, args.warmup, sshd)
                if count.close() < args.hosts:
                    raise SystemExit(f"{mon.label}: {count.most} of {args.hosts} hosts' probes ran")
                results.setdefault(mon.label, []).append(r)
                print(
                    f"  rep {rep + 1} {mon.label}: app tree {r['cpu_pct']:.2f} % "
                    f"(own {r['own_pct']:.2f} %), {r['ms_per_sample']:.1f} ms/sample; "
                    f"sshd side {r['sshd_cpu_pct']:.1f} % ({count.most} probes); "
                    f"{r['rss_mib']:.0f} MiB",
                    flush=True,
                )
    finally:
        server.stop()
        stand_in.close()
        shutil.rmtree(home, ignore_errors=True)
    return results


def spread(rows: list[dict[str, float]], key: str, fmt: str = ".2f") -> str:
    xs = [r[key] for r in rows]
    return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"


def report(results: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> str:
    """Medians (min-max) as a Markdown table."""
    lines = [
        "| tree | app CPU % of a core | app own process % | app ms/sample | app RSS MiB "
        "| sshd side (the hosts' probes) % |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, rows in results.items():
        lines.append(
            f"| {label} | {spread(rows, 'cpu_pct')} | {spread(rows, 'own_pct')} | "
            f"{spread(rows, 'ms_per_sample', '.1f')} | {spread(rows, 'rss_mib', '.0f')} | "
            f"{spread(rows, 'sshd_cpu_pct', '.1f')} |"
        )
    lines.append("")
    lines.append(
        f"{args.hosts} host{'s' * (args.hosts != 1)} x 8 moving stand-in GPUs ({args.gpu}) "
        "over the loopback sshd, "
        f"--interval {args.interval:g}, 120x40 pty, medians (min-max) of {args.repeats} windows "
        f"of {args.seconds:g} s after {args.warmup:g} s, {os.cpu_count()} CPU cores"
    )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=20.0, help="one window (default 20)")
    ap.add_argument("--warmup", type=float, default=12.0, help="seconds before a window")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gpu", choices=("smi", "nvml"), default="nvml")
    ap.add_argument(
        "--baseline-dir",
        type=Path,
        help="another tree measured the same way (`git archive REV tui dflash | tar -x`)",
    )
    ap.add_argument(
        "--profile", type=Path, help="py-spy the app for one window instead (.svg, or .txt raw)"
    )
    ap.add_argument(
        "--gil",
        action="store_true",
        help="with --profile: only the thread holding the GIL (py-spy --gil); without it a "
        "thread waiting for the GIL (the diagnosis') is counted as busy where it waits",
    )
    args = ap.parse_args()
    why = sshd_unavailable()
    if why:
        print(f"hosts_cost: {why}", file=sys.stderr)
        return 2
    results = run(args)
    if not args.profile:
        print(report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
