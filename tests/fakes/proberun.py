"""Run tui/core/probe/main.py the way the transports do: ``python3 - ARGS``, source on stdin."""

from __future__ import annotations

import functools
import json
import selectors
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dflash_tui.core.probe.bundle import PROBE_PARTS, probe_source

PROBE = Path(__file__).resolve().parents[2] / "tui" / "core" / "probe" / "main.py"
PROBE_FILES = (PROBE, *(PROBE.with_name(p) for p in PROBE_PARTS))
SOURCE = probe_source()  # what the transports send: the parts, then probe.py


@functools.cache
def python3() -> str:
    """The real interpreter behind ``python3`` on PATH (not a pyenv shim), resolved once."""
    out = subprocess.run(
        ["python3", "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def run_probe(
    *args: str, python: str | None = None, timeout: float = 60.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """One ``--once`` sample as a dict; fails the test on a non-zero exit or extra output."""
    res = subprocess.run(
        [python or python3(), "-", "--once", *args],
        input=SOURCE,
        capture_output=True,
        timeout=timeout,
        env=env,
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 1, res.stdout[:2000]
    return json.loads(lines[0])


class ProbeStream:
    """A live ``--interval`` probe; ``next()`` returns the next sample (fails after a timeout)."""

    def __init__(self, *args: str, interval: float = 0.2, python: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [python or python3(), "-", f"--interval={interval}", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(SOURCE)
        self.proc.stdin.close()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def next(self, timeout: float = 20.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        if not self.sel.select(timeout):
            raise AssertionError(f"no probe sample within {timeout}s")
        line = self.proc.stdout.readline()
        assert line, "the probe stopped: " + self.proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
        return json.loads(line)

    def until(
        self, cond: Callable[[dict[str, Any]], bool], timeout: float = 20.0
    ) -> list[dict[str, Any]]:
        """Samples up to and including the first that satisfies ``cond``."""
        seen, deadline = [], time.monotonic() + timeout
        while True:
            seen.append(self.next(max(0.1, deadline - time.monotonic())))
            if cond(seen[-1]):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met in {len(seen)} samples")

    def close(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        return self.proc.returncode

    def __enter__(self) -> ProbeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def log_lines(samples: Sequence[dict[str, Any]], path: str) -> list[str]:
    """Every line the samples sent for the log at ``path``, in order."""
    return [ln for s in samples for lg in s["logs"] if lg["path"] == path for ln in lg["lines"]]
