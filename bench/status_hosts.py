#!/usr/bin/env python3
"""Wall time of ``dflash-tui status --json`` across N hosts over SSH (goal: 64 hosts in 3 s).

Every host is a labelled ``[[hosts]]`` entry reaching the real loopback OpenSSH sshd of
tests/integration (root, /usr/sbin/sshd), each with a run root of its own; the sessions read 8
moving stand-in GPUs through the fake pynvml, as bench/hosts_cost.py sets them up. One sshd
stands for N machines, so it is given ``MaxStartups`` above N (OpenSSH's default drops
unauthenticated connections beyond 10 at random, which N separate hosts would not do); the
client's own bound on connections opening at once is the code's.

Each run is a fresh ``python -m dflash_tui.cli.main status --json --config HOSTS`` (the
command a user types, imports included); it must print N documents, none unreachable. Runs
alternate between the host counts, their order reversed every other run, after one warm-up
run each (byte code, disk cache).

    .venv/bin/python bench/status_hosts.py [--hosts 8,16,64] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from hosts_cost import stand_in_sshd, write_config  # noqa: E402
from loopback_sshd import sshd_unavailable  # noqa: E402
from monitor_cost import CLK_TCK, in_turn, tree_ticks  # noqa: E402


def one_run(config: Path, hosts: int, env: dict[str, str], sshd: int) -> dict[str, float]:
    """Wall seconds of one ``status --json`` over ``hosts`` hosts (every one must answer), the
    CPU seconds of the command (the client) and of the sshd's tree (the hosts' side)."""
    argv = [sys.executable, "-m", "dflash_tui.cli.main", "status", "--json"]
    s0, c0, t0 = tree_ticks(sshd), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    res = subprocess.run([*argv, "--config", str(config)], env=env, capture_output=True)
    took = time.perf_counter() - t0
    c1, s1 = resource.getrusage(resource.RUSAGE_CHILDREN), tree_ticks(sshd)
    client = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    try:
        docs = json.loads(res.stdout)
    except ValueError:
        raise SystemExit(f"status printed no JSON: {res.stderr[-600:]!r}") from None
    docs = docs if isinstance(docs, list) else [docs]
    gone = [d["host"] for d in docs if "error" in d]
    if len(docs) != hosts or gone:
        raise SystemExit(f"{len(docs)} documents for {hosts} hosts; unreachable: {gone[:5]}")
    return {"wall_s": took, "client_cpu_s": client, "hosts_cpu_s": (s1 - s0) / CLK_TCK}


Rows = dict[int, list[dict[str, float]]]


def run(args: argparse.Namespace, counts: list[int]) -> Rows:
    took: Rows = {n: [] for n in counts}
    with stand_in_sshd("status-hosts-", "nvml", max(counts)) as (home, server):
        env = dict(os.environ) | server.env | {"XDG_CONFIG_HOME": str(home / "config")}
        env["XDG_STATE_HOME"] = str(home / "state")
        assert server.proc is not None
        sshd = server.proc.pid
        configs = {n: write_config(home / f"hosts-{n}.toml", n, home / "runs") for n in counts}
        for n in counts:  # warm-up
            one_run(configs[n], n, env, sshd)
        for rep in range(args.runs):
            for n in in_turn(counts, rep):
                r = one_run(configs[n], n, env, sshd)
                took[n].append(r)
                print(
                    f"  run {rep + 1}: {n} hosts {r['wall_s']:.2f} s, client CPU "
                    f"{r['client_cpu_s']:.2f} s, hosts' side {r['hosts_cpu_s']:.2f} s",
                    flush=True,
                )
    return took


def report(took: Rows, args: argparse.Namespace) -> str:
    lines = [
        "| hosts | wall s, median (min-max) | wall ms per host | client CPU s | client CPU ms "
        "per host | hosts' side CPU s (sshd + probes) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n, rows in took.items():
        xs = [r["wall_s"] for r in rows]
        med = statistics.median(xs)
        client = statistics.median(r["client_cpu_s"] for r in rows)
        hosts = statistics.median(r["hosts_cpu_s"] for r in rows)
        lines.append(
            f"| {n} | {med:.2f} ({min(xs):.2f}-{max(xs):.2f}) | {1000 * med / n:.0f} | "
            f"{client:.2f} | {1000 * client / n:.0f} | {hosts:.2f} |"
        )
    lines.append("")
    lines.append(
        f"`status --json`, N hosts over the loopback sshd, 8 moving fake-NVML GPUs each, "
        f"{args.runs} runs each alternating, {os.cpu_count()} CPU cores"
    )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="8,16,64", help="host counts, comma-separated")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    why = sshd_unavailable()
    if why:
        print(f"status_hosts: {why}", file=sys.stderr)
        return 2
    counts = [int(x) for x in args.hosts.split(",")]
    print(report(run(args, counts), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
