"""A hostile probe: a real program that stands where the probe's interpreter stands
(``DFLASH_TUI_PYTHON``) and prints probe lines whose every string field carries terminal
escapes (OSC 0 title, OSC 52 clipboard, OSC 8 link, CSI cursor moves, DCS, BEL, C1 CSI).

The lines are the healthy scene's sample with the host's readings, a supervisor and a step
event, as the real probe writes them, each string with the payload appended (so a GPU's UUID
and its processes' still match). The program ignores the probe source on its stdin and prints
one line (``--once``) or one every ``--interval`` seconds, each stamped with the time now.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from dflash_tui.app import scenes
from dflash_tui.core.record.codec import snapshot_dict

# Title, clipboard, link, cursor up + erase lines (hides what came before), DCS, BEL, 8-bit CSI.
PAYLOAD = (
    "\x1b]0;PWNED\x07\x1b]52;c;UFdORUQ=\x07\x1b]8;;http://evil.example/\x07L\x1b]8;;\x07"
    "\x1b[3A\x1b[2K\x1bP+q50574e\x1b\\\x07\x9b2J"
)
MARK = "PWNED"  # the payload's visible word: shown escaped on the command line
RAW = ("\x1b", "\x07", "\x9b", "\x00")  # none of these may reach a terminal


def hostile(value: Any) -> Any:
    """``value`` with the payload appended to every string in it (keys kept)."""
    if isinstance(value, str):
        return value + PAYLOAD
    if isinstance(value, list):
        return [hostile(v) for v in value]
    if isinstance(value, dict):
        return {k: hostile(v) for k, v in value.items()}
    return value


def template() -> dict[str, Any]:
    snap = scenes.host_health(samples=1)[0]
    d = snapshot_dict(snap)
    d["procs"] = [dict(vars(p)) for p in snap.procs]
    d["supervisor"] = {"pid": 4100, "host": "gpu-box", "version": "1", "mode": "daemon",
                       "started_at": snap.time, "heartbeat_at": snap.time, "restarts": 1,
                       "policy": {"enabled": True}}  # fmt: skip
    d["last_step"] = {"event": "step", "time": snap.time, "step": 7, "loss": 1.5}
    d["errors"] = ["a probe error"]
    d["telemetry"] = {"source": "nvml", "error": "nvml said something"}
    return hostile(d)


EMIT = """
import json, sys, time
line = json.load(open(sys.argv[1]))
once = "--once" in sys.argv
interval = 0.5
for a in sys.argv:
    if a.startswith("--interval="):
        interval = float(a.split("=", 1)[1])
while True:
    line["time"] = time.time()
    if line.get("run"):
        line["run"]["started_at"] = time.time() - 300
    for g in line.get("supervisor") and [line["supervisor"]] or []:
        g["heartbeat_at"] = time.time()
    print(json.dumps(line), flush=True)
    if once:
        break
    time.sleep(interval)
"""


def install(where: Path) -> str:
    """Write the hostile probe under ``where``; the value for ``DFLASH_TUI_PYTHON``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "line.json").write_text(json.dumps(template()))
    (where / "emit.py").write_text(EMIT)
    script = where / "python"
    emit = [sys.executable, str(where / "emit.py"), str(where / "line.json")]
    script.write_text(f'#!/bin/sh\ncat >/dev/null\nexec {shlex.join(emit)} "$@"\n')
    script.chmod(0o755)
    return str(script)


def raw_in(text: str | bytes) -> list[str]:
    """Each raw terminal-control character in ``text``, with what follows it."""
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return [repr(s[i : i + 8]) for i, c in enumerate(s) if c in RAW]


PEAK = (
    "import resource, subprocess, sys;"
    "r = subprocess.run(sys.argv[1:], capture_output=True);"
    "sys.stderr.buffer.write(r.stderr); sys.stdout.buffer.write(r.stdout);"
    "print(); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def with_peak_rss(cmd: list[str], **kw: Any) -> tuple[int, str, str, int]:
    """Run ``cmd`` under a fresh parent: its exit code, stdout, stderr and peak RSS in KiB."""
    import subprocess

    res = subprocess.run([sys.executable, "-c", PEAK, *cmd], capture_output=True, text=True, **kw)
    out, _, last = res.stdout.rstrip("\n").rpartition("\n")
    rc, peak = (int(x) for x in last.split())
    return rc, out, res.stderr, peak


def shouting_probe(where: Path, line_py: str) -> str:
    """A probe in the probe's place that prints the line the Python expression ``line_py``
    makes (then, streaming, a second ordinary line); the value for ``DFLASH_TUI_PYTHON``."""
    where.mkdir(parents=True, exist_ok=True)
    emit = where / "shout.py"
    emit.write_text(
        "import json, sys, time\n"
        f"sys.stdout.write({line_py} + '\\n')\n"
        "if '--once' not in sys.argv:\n"
        "    print(json.dumps({'time': time.time(), 'host': 'after'}), flush=True)\n"
        "    time.sleep(60)\n"
    )
    script = where / "python"
    script.write_text(
        f'#!/bin/sh\ncat >/dev/null\nexec {shlex.join([sys.executable, str(emit)])} "$@"\n'
    )
    script.chmod(0o755)
    return str(script)
