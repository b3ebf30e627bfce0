"""The ``dflash-tui`` command line (DESIGN.md's contract).

``dflash-tui`` alone starts the app; ``status``, ``launch``, ``kill`` and ``restart`` are the
same actions for scripts; ``supervise`` is the headless supervisor. Textual is imported only
when the app starts.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dflash_tui.core.base.config import Config, ConfigError, resolve
from dflash_tui.core.base.timings import KILL_GRACE_S, RELEASE_TIMEOUT_S, START_WINDOW_S

SUBCOMMANDS = ("status", "launch", "kill", "restart", "supervise", "app")


def _common(
    p: argparse.ArgumentParser, suppress: bool, runs: bool = True, watch: bool = True
) -> None:
    # Subparsers use SUPPRESS so a flag given before the subcommand is not reset to None.
    d: Any = argparse.SUPPRESS if suppress else None
    p.add_argument("--config", metavar="FILE", default=d, help="TOML config file")
    p.add_argument("--host", default=d, help="[user@]host[:port] or ssh-config alias")
    p.add_argument("--container", default=d, help="pct:ID | docker:NAME | 'template with {cmd}'")
    p.add_argument("--topology", default=d, help="target:drafter GPUs, e.g. 0-4:5-7")
    p.add_argument("--log", action="append", default=d, metavar="PATH", help="extra log to watch")
    p.add_argument("--run-root", default=d, metavar="DIR", help="where run directories live")
    p.add_argument("--command", default=d, metavar="CMD", help="the run command")
    p.add_argument("--interval", type=float, default=d, help="seconds between samples")
    if watch:  # only the app watches a run long enough to restart it
        p.add_argument(
            "--auto-restart",
            action="store_true",
            default=d,
            help="relaunch the run after a crash, as the config's [restart] table says",
        )
    if runs:  # a launch prunes
        p.add_argument(
            "--keep-runs",
            type=int,
            default=d,
            metavar="N",
            help="prune older run dirs (0: keep all)",
        )
    p.add_argument(
        "--insecure-accept-new-host-key",
        action="store_true",
        default=d,
        help="trust an SSH host key not yet in known_hosts (never a changed one)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dflash-tui", description="Supervise a DFlash drafter-training run."
    )
    _common(parser, suppress=False)
    parser.add_argument("--read-only", action="store_true", help="hide every destructive action")
    parser.add_argument("--theme", help="dflash-dark, dflash-light, dflash-contrast, ...")
    sub = parser.add_subparsers(dest="subcommand")
    st = sub.add_parser("status", help="one sample + diagnosis")
    _common(st, suppress=True, runs=False, watch=False)
    st.add_argument("--json", action="store_true", help="print the schema-1 JSON document")
    st.add_argument("--fail-on", choices=("warning", "error"), help="non-zero exit on findings")
    for name in ("launch", "kill", "restart"):
        c = sub.add_parser(name, help=f"{name} the run")
        _common(c, suppress=True, runs=name != "kill", watch=False)
        c.add_argument("--json", action="store_true", help="print the result as JSON")
        c.add_argument(
            "--grace",
            type=float,
            default=KILL_GRACE_S,
            help="seconds between TERM and KILL (default %(default)s)",
        )
        if name in ("launch", "restart"):
            c.add_argument(
                "--start-window",
                type=float,
                default=START_WINDOW_S,
                help="seconds a job must live (default %(default)s)",
            )
            c.add_argument("--clear-cache", action="store_true", help="clear the compile cache")
            c.add_argument(
                "--release-timeout",
                type=float,
                default=RELEASE_TIMEOUT_S,
                help="seconds to wait for the GPUs (default %(default)s)",
            )
        if name == "launch":
            c.add_argument("--restart", action="store_true", help="kill a live run first")
    from dflash_tui.cli.supervise import add_arguments

    sv = sub.add_parser("supervise", help="headless supervision: auto-restart and alerts")
    _common(sv, suppress=True)
    add_arguments(sv)
    return parser


def _script_command(cfg: Config, args: argparse.Namespace) -> int:
    if args.subcommand == "status":
        from dflash_tui.cli.status import main as status_main

        return status_main(cfg, args)
    from dflash_tui.cli.run import main as control_main

    return control_main(cfg, args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        cfg: Config = resolve(vars(args))
    except ConfigError as exc:
        print(f"dflash-tui: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "keep_runs", None) is None:  # not given: the config's [restart] keep_runs
        args.keep_runs = cfg.host.keep_runs
    if args.subcommand == "supervise":
        from dflash_tui.cli.supervise import main as supervise_main

        return supervise_main(cfg, args, argv)
    if args.subcommand in ("status", "launch", "kill", "restart"):
        try:
            return _script_command(cfg, args)
        except BrokenPipeError:  # `status --json | head`: the reader left, not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
    from dflash_tui.app.main import main as app_main

    return app_main(cfg, args)


if __name__ == "__main__":
    sys.exit(main())
