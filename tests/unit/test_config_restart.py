"""The [restart] table (auto-restart policy + run-directory retention) and its flags."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import config_file

from dflash_tui.cli.main import build_parser, main
from dflash_tui.core.base.config import ConfigError, load_file, resolve
from dflash_tui.core.base.timings import RestartPolicy


def test_defaults_are_off_and_keep_everything(tmp_path: Path) -> None:
    h = load_file(config_file(tmp_path, "[run]\ncommand = 'true'\n")).host
    assert h.restart == RestartPolicy() and not h.restart.enabled
    assert h.keep_runs == 0


def test_restart_table_loads(tmp_path: Path) -> None:
    text = """
[restart]
auto = true
success_codes = [0, 2]
retries = 5
backoff_s = 1
max_backoff_s = 30.5
stable_s = 120
keep_runs = 10
"""
    h = load_file(config_file(tmp_path, text)).host
    assert h.restart.enabled and h.restart.success_codes == frozenset({0, 2})
    assert (h.restart.retries, h.restart.backoff_s, h.restart.max_backoff_s) == (5, 1.0, 30.5)
    assert h.restart.stable_s == 120.0 and h.keep_runs == 10


def test_a_host_table_replaces_the_top_level_one(tmp_path: Path) -> None:
    text = """
[restart]
auto = true
retries = 7
[[hosts]]
address = "a"
[[hosts]]
address = "b"
[hosts.restart]
auto = false
keep_runs = 3
"""
    a, b = load_file(config_file(tmp_path, text)).hosts
    assert a.restart.enabled and a.restart.retries == 7 and a.keep_runs == 0
    assert not b.restart.enabled and b.restart.retries == 3 and b.keep_runs == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("restart = 3", "restart must be a table"),
        ("[restart]\nauto = 'yes'", "restart.auto must be true or false"),
        ("[restart]\nretries = -1", "restart.retries must be between 0 and 10000"),
        ("[restart]\nretries = 1.5", "restart.retries must be a whole number"),
        ("[restart]\nretries = true", "restart.retries must be a whole number"),
        ("[restart]\nbackoff_s = 'two'", "restart.backoff_s must be a number"),
        ("[restart]\nbackoff_s = -0.5", "restart.backoff_s must be a finite number >= 0"),
        ("[restart]\nstable_s = inf", "restart.stable_s must be a finite number >= 0"),
        ("[restart]\nstable_s = nan", "restart.stable_s must be a finite number >= 0"),
        ("[restart]\nbackoff_s = 10\nmax_backoff_s = 5", "max_backoff_s (5) is below backoff_s"),
        ("[restart]\nsuccess_codes = 0", "success_codes must be a list of exit codes"),
        ("[restart]\nsuccess_codes = [256]", "success_codes must be a list of exit codes"),
        ("[restart]\nsuccess_codes = ['0']", "success_codes must be a list of exit codes"),
        ("[restart]\nkeep_runs = -2", "restart.keep_runs must be between 0 and 10000"),
        ("[restart]\nretry = 5", "unknown key 'restart.retry' (did you mean 'restart.retries'?)"),
        ("[[hosts]]\naddress = 'a'\nrestart = 1", "hosts[0].restart must be a table"),
        ("[[hosts]]\naddress = 'a'\n[hosts.restart]\nretries = 'x'", "hosts[0].restart.retries"),
    ],
)
def test_bad_restart_values_are_refused(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_file(config_file(tmp_path, text))


def test_flags_enable_and_set_retention(tmp_path: Path) -> None:
    path = config_file(tmp_path, "[restart]\nretries = 9\nkeep_runs = 4\n")
    args = vars(build_parser().parse_args(["--config", str(path), "--auto-restart"]))
    h = resolve(args).host
    assert h.restart.enabled and h.restart.retries == 9 and h.keep_runs == 4  # others kept
    args = vars(build_parser().parse_args(["--config", str(path), "--keep-runs", "2"]))
    h = resolve(args).host
    assert not h.restart.enabled and h.keep_runs == 2
    with pytest.raises(ConfigError, match="--keep-runs must be a whole number >= 0"):
        resolve(vars(build_parser().parse_args(["--keep-runs", "-1"])))


def test_launch_keep_runs_defaults_to_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`launch` without --keep-runs takes [restart] keep_runs; with it, the flag wins."""
    seen: list[int] = []

    def fake(cfg: object, args: object) -> int:
        seen.append(args.keep_runs)  # type: ignore[attr-defined]
        return 0

    monkeypatch.setattr("dflash_tui.cli.run.run_control", fake)
    path = config_file(tmp_path, "[restart]\nkeep_runs = 4\n")
    assert main(["--config", str(path), "launch"]) == 0
    assert main(["--config", str(path), "restart", "--keep-runs", "1"]) == 0
    assert main(["launch"]) == 0
    assert seen == [4, 1, 0]
