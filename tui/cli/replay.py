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

from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.record.replay import RecordError, Recording, load, parse_time, status_at

DEMOS = ("seed",)
TIME_HELP = (
    "ISO-8601 (2026-12-03T07:00:05Z; no zone: UTC), epoch seconds (1764745205.5), or an "
    "offset: +90s / +1m30s / +2h from the first sample, -10s from the last"
)


def demo_dir(name: str) -> Path:
    """The shipped recording ``name`` (package data, built by bench/make_seed_recording.py)."""
    return Path(str(resources.files("dflash_tui.core.record") / "demo" / name))


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        metavar="RUN_DIR|RECORD_DIR",
        help="a run directory (its record/) or a record directory",
    )
    p.add_argument(
        "--demo",
        choices=DEMOS,
        help="replay a shipped recording (the seed incident; default: none)",
    )
    p.add_argument("--at", metavar="TIME", help=f"start there: {TIME_HELP} (default: the start)")
    p.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="playback speed, recorded seconds per second (default 1)",
    )
    p.add_argument("--theme", default=None, help="the app's theme (default: as for dflash-tui)")


def _load(path: str | None, demo: str | None) -> Recording:
    if demo:
        return load(demo_dir(demo))
    if not path:
        raise RecordError("give a RUN_DIR or RECORD_DIR, or --demo seed")
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
        run = doc["run"]
        prog = doc.get("progress") or {}
        print(
            terminal_safe(
                f"{doc['host']} at {doc['time']}: "
                + (f"run {run['id']} {run['state']}" if run["id"] else "no run of ours")
                + (
                    f" (exit {run['exit_code']}: {run['exit_meaning']})"
                    if run["exit_code"] is not None
                    else ""
                )
                + (f", step {prog['step']}" if prog.get("step") is not None else "")
            )
        )
        for f in doc["findings"]:
            print(terminal_safe(f"  {f['severity'].upper():7} {f['code']}: {f['message']}"))
        for note in rec.notes:
            print(terminal_safe(f"note: {note}"), file=sys.stderr)
    return 0
