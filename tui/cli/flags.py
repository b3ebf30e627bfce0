"""The flags of the subcommands whose work lives in heavier modules (supervise, metrics,
replay, serve): building the parser imports only this, so ``status`` does not pay for the
supervisor, the recorder or the web server's imports."""

from __future__ import annotations

import argparse

from dflash_tui.core.base.timings import START_WINDOW_S

DEFAULT_LISTEN = "127.0.0.1:9400"  # metrics
DEFAULT_BIND = "127.0.0.1:8765"  # serve
DEMOS = ("seed",)  # replay's shipped recordings
TIME_HELP = (
    "ISO-8601 (2026-12-03T07:00:05Z; no zone: UTC), epoch seconds (since 1970), or an "
    "offset: +90s / +1m30s / +2h from the first sample, -10s from the last"
)


def add_supervise_arguments(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--detach", action="store_true", help="run in the background (own session)")
    mode.add_argument("--stop", action="store_true", help="stop the running supervisor")
    mode.add_argument("--once", action="store_true", help="one decision cycle, then exit")
    p.add_argument(
        "--poll",
        type=float,
        default=None,
        metavar="S",
        help="seconds between cycles (default: --interval)",
    )
    p.add_argument(
        "--start-window",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds a job must live (default {START_WINDOW_S:g})",
    )


def add_metrics_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="ADDR:PORT",
        help="where to serve /metrics (default %(default)s; port 0 picks a free one)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --listen address (no authentication: anyone who reaches "
        "it reads the hosts, GPUs and runs)",
    )


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        metavar="RUN_DIR|RUN_ROOT|RECORD_DIR",
        help="a run directory (its record/), a run root (every run's record, in time order) "
        "or a record directory",
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


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bind",
        default=DEFAULT_BIND,
        metavar="ADDR:PORT",
        help="where to serve the app (default %(default)s; port 0 picks a free one)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --bind address (the token is the only guard; no TLS)",
    )
    p.add_argument(
        "--allow-control",
        action="store_true",
        help="let the browser launch, kill and restart (default: read-only, as --read-only)",
    )
    p.add_argument(
        "--theme",
        default=argparse.SUPPRESS,
        help="the app's theme in every tab (default: as for dflash-tui)",
    )


def add_wait_arguments(p: argparse.ArgumentParser) -> None:
    from dflash_tui.cli.until import parse_until

    p.add_argument(
        "--until",
        required=True,
        type=parse_until,
        metavar="OUTCOME",
        help="started (running past the start window, or ended with exit 0), first-step, "
        "step:N (step N or later logged), exited (ended with exit 0) or healthy (running, "
        "stepping, no error finding); required: no default",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="give up after S seconds with exit 124 (default: wait as long as it takes)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the status document(s) the wait ended on; the reason goes to stderr",
    )
