#!/usr/bin/env python3
"""What one refresh costs over SSH: dflash-tui's persistent probe channel versus the seed's
``ssh host 'grep -E ... LOG | tail -20; nvidia-smi --query-gpu=...'`` (a fresh connection and
a full grep each time), with a 1 MB and a 1 GB log, against a loopback OpenSSH sshd (root;
/usr/sbin/sshd) and the stand-in nvidia-smi of tests/fakes.

    .venv/bin/python bench/refresh_ssh.py [--runs 7] [--samples 20] [--big-mb 1024] [--write]

Medians of several runs; ``--write`` puts the table into docs/ssh.md. The logs are generated
in a temporary folder and deleted at the end (1 GB needs that much free disk for a moment).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "integration")]

from fakes.scenario import FAKES, NVML_FAKE_DIR, box, write_scenario  # noqa: E402
from loopback_sshd import ALIAS, LoopbackSshd, sshd_unavailable  # noqa: E402

from dflash_tui.core.base.config_types import HostConfig  # noqa: E402
from dflash_tui.core.link.feed import probe_command  # noqa: E402
from dflash_tui.core.link.ssh import SshTransport  # noqa: E402
from dflash_tui.core.probe.bundle import probe_source  # noqa: E402

PATTERN = "Exception|Error|tok/s|step=|compile|warmed"
SMI = "nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader"
DOC = ROOT / "docs" / "ssh.md"
START, END = "<!-- bench:refresh_ssh:start -->", "<!-- bench:refresh_ssh:end -->"


def make_log(path: Path, mib: int) -> None:
    """``mib`` MiB of training-log-like text (half the lines match the seed's grep)."""
    lines = []
    for i in range(6000):
        lines.append(f"step={i} loss={2.5 - i / 6000:.4f} acc={i / 9000:.3f} tok/s={2800 + i % 97}")
        lines.append(f"[rank0] dataloader worker {i % 8} prefetched batch {i} (pinned memory)")
    block = ("\n".join(lines) + "\n").encode()
    block = (block * (1 + (1 << 20) // len(block)))[: 1 << 20]
    block = block[: block.rfind(b"\n") + 1]
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)


def fresh(server: LoopbackSshd, log: Path, runs: int) -> list[float]:
    """The seed's check: a new ssh connection, grep the whole log, nvidia-smi."""
    cmd = f"grep -E {json.dumps(PATTERN)} {log} | tail -20; {SMI}"
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(
            ["ssh", "-F", str(server.ssh_config), ALIAS, cmd], capture_output=True, check=True
        )
        times.append(time.perf_counter() - t0)
        assert b"step=" in out.stdout and b", " in out.stdout
    return times


async def streamed(log: Path, samples: int) -> tuple[list[float], list[float]]:
    """Gaps between samples of the live probe run with no pause (its cost per refresh), and
    the part of each spent in GPU telemetry (nvidia-smi), as the probe reports it."""
    t = SshTransport(ALIAS)
    cmd = probe_command(t.python, HostConfig(logs=(str(log),)), interval=0.001)
    stamps, smi = [], []
    try:
        async for line in t.stream(cmd, probe_source()):
            stamps.append(time.perf_counter())
            sample = json.loads(line)
            assert sample["logs"][0]["exists"]
            smi.append(sample["telemetry"]["elapsed_ms"] / 1000)
            if len(stamps) > samples + 1:  # the first sample also starts python: left out
                break
    finally:
        await t.close()
    return [b - a for a, b in itertools.pairwise(stamps[1:])], smi[2:]


async def once_on_open_connection(log: Path, runs: int) -> list[float]:
    """``status``-style: a new channel on the open connection, a --once probe in it."""
    t = SshTransport(ALIAS)
    cmd = probe_command(t.python, HostConfig(logs=(str(log),)), once=True)
    times = []
    try:
        await t.run("true")  # connect first: measured is the refresh, not the handshake
        for _ in range(runs):
            t0 = time.perf_counter()
            res = await t.run(cmd, probe_source())
            times.append(time.perf_counter() - t0)
            assert res.rc == 0, res.stderr
    finally:
        await t.close()
    return times


def ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def measure(server: LoopbackSshd, log: Path, runs: int, samples: int) -> dict[str, float]:
    gaps, smi = asyncio.run(streamed(log, samples))
    return {
        "fresh": ms(fresh(server, log, runs)),
        "once": ms(asyncio.run(once_on_open_connection(log, runs))),
        "stream": ms(gaps),
        "own": ms([g - s for g, s in zip(gaps, smi, strict=False)]),
    }


def table(small: dict[str, float], big: dict[str, float], big_mb: int, runs: int) -> str:
    rows = [
        ("fresh", "fresh `ssh host 'grep -E ... LOG \\| tail -20; nvidia-smi ...'`"),
        ("once", "open connection, new channel, `probe --once` (what `status` does)"),
        ("stream", "persistent probe channel, one sample (the app's refresh)"),
        ("own", "... of which the probe itself (nvidia-smi calls excluded)"),
    ]
    big_name = f"{big_mb // 1024} GB" if big_mb >= 1024 else f"{big_mb} MB"
    out = [
        f"| refresh by | 1 MB log | {big_name} log | {big_name} / 1 MB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, label in rows:
        out.append(
            f"| {label} | {small[key]:.0f} ms | {big[key]:.0f} ms | {big[key] / small[key]:.1f}x |"
        )
    out.append(
        f"| fresh / stream | {small['fresh'] / small['stream']:.1f}x | "
        f"{big['fresh'] / big['stream']:.1f}x | |"
    )
    cpu = f"{os.cpu_count()} CPU cores"
    out.append("")
    out.append(
        f"Medians of {runs} runs (fresh, once) and of the gaps between consecutive samples "
        f"(stream); loopback {ssh_version()}, {cpu}, logs in the page cache, the stand-in "
        "nvidia-smi of tests/fakes (a Python script). Measured by `bench/refresh_ssh.py`."
    )
    return "\n".join(out)


def ssh_version() -> str:
    out = subprocess.run(["ssh", "-V"], capture_output=True, text=True)
    return (out.stderr or out.stdout).split(",")[0].strip()


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--big-mb", type=int, default=1024)
    ap.add_argument("--write", action="store_true", help="update the table in docs/ssh.md")
    args = ap.parse_args(argv)
    why = sshd_unavailable() or (None if shutil.which("ssh") else "no ssh client")
    if why:
        print(f"refresh_ssh: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dflash-bench-") as tmp:
        work = Path(tmp)
        scenario = work / "scenario.json"
        write_scenario(scenario, box(8))
        env = {"FAKE_SMI_SCENARIO": str(scenario), "PYTHONPATH": str(NVML_FAKE_DIR)}
        server = LoopbackSshd(work / "sshd", path_prefix=str(FAKES), session_env=env)
        os.environ.update(server.env)
        server.start()
        try:
            results = []
            for mib in (1, args.big_mb):
                log = work / f"train-{mib}.log"
                t0 = time.perf_counter()
                make_log(log, mib)
                os.sync()  # measure with the disk idle, not while 1 GB is written back
                print(f"{mib} MiB log written in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
                results.append(measure(server, log, args.runs, args.samples))
                log.unlink()
                print(f"{mib} MiB: {results[-1]}", file=sys.stderr)
        finally:
            server.stop()
    text = table(results[0], results[1], args.big_mb, args.runs)
    print(text)
    if args.write:
        write_doc(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
