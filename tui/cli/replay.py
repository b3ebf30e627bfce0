"""``dflash-tui replay`` and ``status --replay DIR --at TIME``: a flight recording read back.

``replay`` opens the app, read-only, on the recording (tui/app/replay.py); ``status --replay``
prints the status document at one moment (the same JSON as ``status --json``, plus
``replay``). Neither reaches any host.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from dflash_tui.core.base.rundir import exit_text
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.record.replay import RecordError, Recording, load, parse_time, status_at


def demo_dir(name: str) -> Path:
    """The shipped recording ``name`` (package data, built by bench/make_seed_recording.py)."""
    return Path(str(resources.files("dflash_tui.core.record") / "demo" / name))


def _load(path: str | None, demo: str | None) -> Recording:
    if demo:
        return load(demo_dir(demo))
    if not path:
        raise RecordError("give a RUN_DIR, RUN_ROOT or RECORD_DIR, or --demo seed")
    return load(Path(path).expanduser())


def _fail(exc: Exception) -> int:
    print(terminal_safe(f"dflash-tui: {exc}"), file=sys.stderr)
    return 2


def run_replay(args: argparse.Namespace) -> int:
    try:
        rec = _load(args.path, args.demo)
        at = parse_time(args.at, rec) if args.at else None
    except RecordError as exc:
        return _fail(exc)
    if not args.speed > 0:
        return _fail(ValueError(f"--speed must be above 0, not {args.speed}"))
    from dflash_tui.app.replay import run_replay_app  # Textual only when the app starts

    return run_replay_app(rec, at, args.speed, args.theme)


def doc_line(doc: dict[str, Any]) -> str:
    """The document's first line: the host, when, the run (its exit as ``exit_text``), the step."""
    run, prog = doc["run"], doc.get("progress") or {}
    line = f"{doc['host']} at {doc['time']}: "
    line += f"run {run['id']} {run['state']}" if run["id"] else "no run of ours"
    if isinstance(run["exit_code"], int):
        line += f" ({exit_text(run['exit_code'])})"
    return line + (f", step {prog['step']}" if prog.get("step") is not None else "")


def run_status_replay(args: argparse.Namespace) -> int:
    """``status --replay DIR [--at TIME] [--json]``: the document at that moment."""
    try:
        rec = load(Path(args.replay).expanduser())
        t = parse_time(args.at, rec) if args.at else rec.end
    except RecordError as exc:
        return _fail(exc)
    doc = status_at(rec, t)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(terminal_safe(doc_line(doc)))
        for f in doc["findings"]:
            print(terminal_safe(f"  {f['severity'].upper():7} {f['code']}: {f['message']}"))
        for note in rec.notes:
            print(terminal_safe(f"note: {note}"), file=sys.stderr)
    return 0
