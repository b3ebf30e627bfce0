"""Helpers for the tests of ``dflash-tui supervise`` (real processes, a temporary run root)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cli(
    *args: str, timeout: float = 120.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``dflash-tui ARGS`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env,
    )  # fmt: skip


def record(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / "supervisor.json").read_text())
    except (OSError, ValueError):
        return {}


def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    t0 = time.monotonic()
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"not in {timeout:g}s: {what}")
        time.sleep(0.1)


def run_dirs(root: Path) -> list[Path]:
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def numbers(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()]


def start_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[19])


def alive(pid: int, ticks: int | None = None) -> bool:
    now = start_ticks(pid)
    return now is not None and (ticks is None or ticks == now)


def sigkill_supervisor(root: Path) -> int:
    """SIGKILL the supervisor named in the record (verified by its start time); its PID."""
    rec = record(root)
    pid, ticks = rec["pid"], rec["start_ticks"]
    assert alive(pid, ticks), rec
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid, ticks), 10, "the supervisor is gone")
    return int(pid)


def cleanup(root: Path) -> None:
    """What a test left: the supervisor (by its recorded PID and start time), then the run."""
    rec = record(root)
    if rec.get("pid") and alive(rec["pid"], rec.get("start_ticks")):
        os.kill(rec["pid"], signal.SIGKILL)
    for d in run_dirs(root):
        try:
            _, pgid, ticks = (int(x) for x in (d / "pid").read_text().split())
        except (OSError, ValueError):
            continue
        if alive(pgid, ticks):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def config(path: Path, restart: str = "", alerts: dict[str, Any] | None = None) -> Path:
    """A config file with a [restart] body and an [alerts] table (values as TOML)."""
    text = f"[restart]\n{restart}\n"
    if alerts:
        text += "[alerts]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in alerts.items())
    path.write_text(text)
    return path


def hook(out: Path) -> str:
    """An alert command: appends the JSON from stdin and DFLASH_ALERT_CODE to ``out``."""
    q = shlex.quote(str(out))
    return f'{{ cat; echo; }} >> {q}.jsonl; printf "%s\\n" "$DFLASH_ALERT_CODE" >> {q}.codes'


def hook_alerts(out: Path) -> list[dict[str, Any]]:
    try:
        text = Path(f"{out}.jsonl").read_text()
    except OSError:
        return []
    return [json.loads(x) for x in text.splitlines() if x.strip()]
