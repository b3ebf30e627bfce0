"""`dflash-tui` subcommands offer only the flags that do something there."""

from __future__ import annotations

import pytest

from dflash_tui.cli.main import build_parser


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
