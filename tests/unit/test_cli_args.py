"""`dflash-tui` subcommands offer only the flags that do something there."""

from __future__ import annotations

import argparse
from importlib import metadata

import pytest

from dflash_tui.app.widgets.themes import DEFAULT_THEME
from dflash_tui.cli.main import build_parser, main


def _help(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("sub", "present", "absent"),
    [
        ("status", ["--json", "--fail-on"], ["--auto-restart", "--keep-runs", "--start-window"]),
        ("kill", ["--grace"], ["--auto-restart", "--keep-runs", "--start-window"]),
        ("launch", ["--keep-runs", "--start-window", "--restart"], ["--auto-restart"]),
        ("restart", ["--keep-runs", "--release-timeout"], ["--auto-restart"]),
    ],
)
def test_subcommand_flags(
    sub: str, present: list[str], absent: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(sub, capsys=capsys)
    assert all(f in text for f in present), text
    assert not any(f in text for f in absent), text


def test_the_app_keeps_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys=capsys)
    assert "--auto-restart" in text and "--keep-runs" in text and "--read-only" in text
    args = build_parser().parse_args(["--auto-restart", "--keep-runs", "3", "status"])
    assert args.auto_restart and args.keep_runs == 3 and args.subcommand == "status"


def test_version_comes_from_the_installed_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"dflash-tui {metadata.version('dflash-tui')}"


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    top = build_parser()
    (sub,) = (a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return [("dflash-tui", top), *sub.choices.items()]


def test_every_option_with_a_value_names_its_default() -> None:
    for name, parser in _parsers():
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0:  # flags: off unless given
                continue
            assert "default" in (action.help or ""), (name, action.option_strings)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], ["seconds between samples (default 2)", "(default ~/.local/state/dflash-tui/runs)"]),
        ([], ["(default 0-4:5-7)", f"{DEFAULT_THEME} (default)"]),
        (["kill"], ["seconds between TERM and KILL (default 10.0)"]),
        (["restart"], ["(default 60.0)", "(default 3.0)", "keep all"]),
    ],
)
def test_help_shows_the_defaults(
    argv: list[str], shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = " ".join(_help(*argv, capsys=capsys).split())
    for words in shown:
        assert words in text, words


def test_status_at_without_a_recording_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # It printed the live status and exited 0: a script believed it had the status at TIME.
    assert main(["status", "--at", "+10s", "--json"]) == 2
    assert "status --at needs --replay DIR" in capsys.readouterr().err
