"""The ``dflash-tui`` command line (DESIGN.md's contract).

``dflash-tui`` alone starts the app; ``status``, ``launch``, ``kill`` and ``restart`` are the
same actions for scripts; ``config`` checks the config file (``--example`` prints a commented
one); ``supervise`` is the headless supervisor. Textual is imported only when the app starts.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dflash_train.topology import Topology
from dflash_tui.cli import flags
from dflash_tui.core.base.config import ConfigError, resolve
from dflash_tui.core.base.config_types import DEFAULT_INTERVAL, DEFAULT_RUN_ROOT, DEMO_STEPS, Config
from dflash_tui.core.base.paths import config_dir
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.base.timings import KILL_GRACE_S, RELEASE_TIMEOUT_S, START_WINDOW_S

SUBCOMMANDS = (
    "status",
    "launch",
    "kill",
    "restart",
    "config",
    "supervise",
    "replay",
    "metrics",
    "serve",
    "wait",
    "completion",
    "app",
)
SCRIPTS = ("status", "launch", "kill", "restart", "config", "wait")


def version() -> str:
    from importlib import metadata  # only here: it costs a tenth of status' wall time

    try:
        return metadata.version("dflash-tui")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``, the version read only when asked (argparse's own action needs the text
    when the parser is built)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"dflash-tui {version()}")  # on stdout, as argparse's own action
        parser.exit()


def _config_help() -> str:
    return (
        "TOML config file (default: $XDG_CONFIG_HOME/dflash-tui/config.toml on Linux, "
        f"here {config_dir() / 'config.toml'}, when it exists; see `dflash-tui config --example`)"
    )


def _common(
    p: argparse.ArgumentParser, suppress: bool, runs: bool = True, watch: bool = True
) -> None:
    # Subparsers use SUPPRESS so a flag given before the subcommand is not reset to None.
    # None means "not given": the config's value, else the default each help names.
    d: Any = argparse.SUPPRESS if suppress else None
    p.add_argument("--config", metavar="FILE", default=d, help=_config_help())
    p.add_argument(
        "--host",
        default=d,
        help="[user@]host[:port], ssh-config alias, or a [[hosts]] label (default: this machine)",
    )
    p.add_argument(
        "--container",
        default=d,
        help="pct:ID | docker:NAME | 'template with {cmd}' (default: none)",
    )
    p.add_argument(
        "--scheduler",
        choices=("direct", "slurm"),
        default=d,
        help="who starts the run: direct (this tool, default) or slurm (sbatch on the host; "
        "see docs/slurm.md)",
    )
    p.add_argument(
        "--topology",
        default=d,
        help=f"target:drafter GPUs (default {Topology().spec()})",
    )
    p.add_argument(
        "--log",
        action="append",
        default=d,
        metavar="PATH",
        help="extra log to watch, repeatable (default: only the run's own log)",
    )
    p.add_argument(
        "--run-root",
        default=d,
        metavar="DIR",
        help=f"where run directories live (default {DEFAULT_RUN_ROOT})",
    )
    p.add_argument(
        "--command",
        default=d,
        metavar="CMD",
        help=f"the run command (default: the bundled tiny pipeline on the CPU, {DEMO_STEPS} steps)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=d,
        metavar="S",
        help=f"seconds between samples (default {DEFAULT_INTERVAL:g})",
    )
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
            help="prune older run dirs (default: [restart] keep_runs, else 0: keep all)",
        )
    p.add_argument(
        "--insecure-accept-new-host-key",
        action="store_true",
        default=d,
        help="trust an SSH host key not yet in known_hosts (never a changed one)",
    )


def _control(sub: Any, name: str) -> None:
    c = sub.add_parser(name, help=f"{name} the run")
    _common(c, suppress=True, runs=name != "kill", watch=False)
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.add_argument(
        "--grace",
        type=float,
        default=KILL_GRACE_S,
        metavar="S",
        help="seconds between TERM and KILL (default %(default)s)",
    )
    if name in ("launch", "restart"):
        c.add_argument(
            "--start-window",
            type=float,
            default=START_WINDOW_S,
            metavar="S",
            help="seconds a job must live (default %(default)s)",
        )
        c.add_argument("--clear-cache", action="store_true", help="clear the compile cache")
        c.add_argument(
            "--release-timeout",
            type=float,
            default=RELEASE_TIMEOUT_S,
            metavar="S",
            help="seconds to wait for the GPUs (default %(default)s)",
        )
    if name == "launch":
        c.add_argument("--restart", action="store_true", help="kill a live run first")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dflash-tui", description="Supervise a DFlash drafter-training run."
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
    _common(parser, suppress=False)
    parser.add_argument("--read-only", action="store_true", help="hide every destructive action")
    parser.add_argument(
        "--theme", help="dflash-dark (default), dflash-light, dflash-contrast, or one of yours"
    )
    sub = parser.add_subparsers(dest="subcommand")
    st = sub.add_parser("status", help="one sample + diagnosis")
    _common(st, suppress=True, runs=False, watch=False)
    fmt = st.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the schema-1 JSON document")
    fmt.add_argument(
        "--openmetrics",
        action="store_true",
        help="print OpenMetrics once, as `dflash-tui metrics` serves it (needs prometheus-client)",
    )
    st.add_argument(
        "--fail-on",
        choices=("warning", "error"),
        help="non-zero exit on findings this severe (default: only when a host is unreachable)",
    )
    st.add_argument(
        "--replay",
        metavar="DIR",
        help="read a recording (run dir or record dir) "
        "instead of the host: the document at --at (no host is reached; default: the host)",
    )
    st.add_argument(
        "--at",
        metavar="TIME",
        help="with --replay: when (ISO-8601, epoch "
        "seconds, +90s from the start, -10s from the end; default: the end)",
    )
    st.add_argument(
        "--watch",
        action="store_true",
        help="keep sampling every --interval; print one plain line per change (findings, run "
        "state, step progress) until Ctrl-C",
    )
    st.add_argument(
        "--progress-every",
        type=float,
        default=30.0,
        metavar="S",
        help="with --watch: step progress at most every S seconds (default %(default)s)",
    )
    for name in ("launch", "kill", "restart"):
        _control(sub, name)
    cf = sub.add_parser("config", help="check the config and show what it sets")
    _common(cf, suppress=True, runs=False, watch=False)
    cf.add_argument(
        "--example", action="store_true", help="print a complete commented example and exit"
    )
    sv = sub.add_parser("supervise", help="headless supervision: auto-restart and alerts")
    _common(sv, suppress=True)
    flags.add_supervise_arguments(sv)
    rp = sub.add_parser("replay", help="the app, read-only, on a flight recording")
    flags.add_replay_arguments(rp)
    mt = sub.add_parser("metrics", help="serve OpenMetrics (Prometheus) at /metrics")
    _common(mt, suppress=True, runs=False, watch=False)
    flags.add_metrics_arguments(mt)
    sr = sub.add_parser("serve", help="the app in a browser (textual-serve), read-only by default")
    _common(sr, suppress=True)
    flags.add_serve_arguments(sr)
    wt = sub.add_parser(
        "wait", help="return once the run reaches an outcome (0), cannot (1), or at --timeout (124)"
    )
    _common(wt, suppress=True, runs=False, watch=False)
    flags.add_wait_arguments(wt)
    cp = sub.add_parser(
        "completion", help="print a shell completion script (source it from your shell's rc)"
    )
    cp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete for")
    return parser


def _script_command(cfg: Config, args: argparse.Namespace) -> int:
    if args.subcommand == "status" and args.watch:
        from dflash_tui.cli.watch import run_watch

        return run_watch(cfg, args)
    if args.subcommand == "status":
        from dflash_tui.cli.status import run_status as status_main

        return status_main(cfg, args)
    if args.subcommand == "wait":
        from dflash_tui.cli.wait import run_wait

        return run_wait(cfg, args)
    if args.subcommand == "config":
        from dflash_tui.cli.config_cmd import run_config as config_main

        return config_main(cfg, args)
    from dflash_tui.cli.run import run_control as control_main

    return control_main(cfg, args)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.subcommand == "completion":  # no config: it describes the parsers only
        from dflash_tui.cli.completion import run_completion

        return run_completion(build_parser(), args.shell)
    if args.subcommand == "config" and args.example:  # even when the user's config is broken
        from dflash_tui.cli.config_cmd import print_example

        return print_example()
    if args.subcommand == "status" and getattr(args, "at", None) and not args.replay:
        # the live status would answer a question the script did not ask
        print("dflash-tui: status --at needs --replay DIR (a recording)", file=sys.stderr)
        return 2
    if getattr(args, "watch", False) and (args.json or args.openmetrics or args.replay):
        print("dflash-tui: status --watch prints plain lines: not with --json, --openmetrics "
              "or --replay", file=sys.stderr)  # fmt: skip
        return 2
    if args.subcommand == "replay" or getattr(args, "replay", None):  # no config, no host
        from dflash_tui.cli import replay

        if args.subcommand == "replay":
            return replay.run_replay(args)
        return replay.run_status_replay(args)
    try:
        cfg: Config = resolve(vars(args))
    except ConfigError as exc:
        print(terminal_safe(f"dflash-tui: {exc}"), file=sys.stderr)  # it quotes the config
        return 2
    for note in cfg.notes:
        print(terminal_safe(f"dflash-tui: note: {note}"), file=sys.stderr)
    if getattr(args, "keep_runs", None) is None:  # not given: the config's [restart] keep_runs
        args.keep_runs = cfg.host.keep_runs
    if args.subcommand == "supervise":
        from dflash_tui.cli.supervise import run_supervise

        return run_supervise(cfg, args, argv)
    if args.subcommand == "metrics":
        from dflash_tui.cli.metrics import run_metrics

        return run_metrics(cfg, args)
    if args.subcommand == "serve":  # the config is checked here, once, before any tab opens
        from dflash_tui.cli.serve import run_serve

        return run_serve(args)
    if args.subcommand in SCRIPTS:
        try:
            return _script_command(cfg, args)
        except BrokenPipeError:  # `status --json | head`: the reader left, not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
    from dflash_tui.app.main import run_app as app_main

    return app_main(cfg, args)


if __name__ == "__main__":
    sys.exit(main())
