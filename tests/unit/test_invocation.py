"""The commands the quit note prints work as printed: the real executable, and flags that
select the same host, container and run root again (each word shell-quoted)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from dflash_tui.cli.main import build_parser
from dflash_tui.core.base.config import load_file, resolve
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.invocation import command_line, own_command, quit_commands

PY = "/opt/py/bin/python3"


def test_own_command_is_the_real_script_or_python_m(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "bin dir" / "dflash-tui"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    link = tmp_path / "link"
    link.symlink_to(script)
    assert own_command(str(link), PY) == [str(script)]
    assert own_command("dflash-tui", PY, which=lambda name: str(script)) == [str(script)]
    python_m = [PY, "-m", "dflash_tui.cli.main"]
    assert own_command("dflash-tui", PY, which=lambda name: None) == python_m  # not on PATH
    assert own_command("/src/tui/cli/main.py", PY) == python_m  # python -m dflash_tui.cli.main
    monkeypatch.chdir(tmp_path)
    assert own_command("link", PY, which=lambda name: None) == python_m
    assert own_command("./link", PY) == [str(script)]  # relative: made absolute


def _again(line: str) -> HostConfig:
    """The host the printed command line selects, read back by the real parser."""
    words = shlex.split(line)
    assert words[:2] == [PY, "kill"]
    cfg = resolve(vars(build_parser().parse_args(words[1:])))
    assert len(cfg.hosts) == 1
    return cfg.host


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"run_root": "/tmp/run root's"},
        {"host": "root@10.0.0.1:2222", "container": "pct:200"},
        {"container": "lxc-attach -n 'my box' -- {cmd}", "run_root": "$HOME/runs"},
    ],
)
def test_the_kill_command_selects_the_same_host_again(flags: dict[str, str]) -> None:
    cfg = resolve(flags)
    kill, again = quit_commands(cfg.host, cfg, program=[PY])
    assert _again(kill) == cfg.host
    assert shlex.split(again) == [PY, *shlex.split(kill)[2:]]  # the app, same flags


def test_multi_host_commands_name_the_config_and_the_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "my conf.toml"
    conf.write_text(
        "[[hosts]]\nlabel = 'a'\n[hosts.run]\nrun_root = '/a'\n"
        "[[hosts]]\nlabel = 'b'\naddress = 'gpu-b'\ncontainer = 'docker:t'\n"
    )
    monkeypatch.chdir(tmp_path)
    cfg = resolve({"config": conf.name})
    for h in cfg.hosts:
        kill, again = quit_commands(h, cfg, program=[PY])
        assert _again(kill) == h
        assert shlex.split(again) == [PY, "--config", str(conf)]  # every host again
    one = resolve({"config": conf.name, "host": "gpu-b"})
    kill, again = quit_commands(one.host, one, program=[PY])
    assert "--host b" in kill and _again(kill) == one.host
    assert _again(again.replace(PY, f"{PY} kill", 1)) == one.host


def test_a_host_in_no_entry_is_given_by_its_address(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("[run]\nrun_root = '/top'\n[[hosts]]\nlabel = 'a'\n")
    cfg = resolve({"config": str(conf), "host": "gpu-z"})
    line = command_line(cfg.host, cfg, "kill", program=[PY])
    assert _again(line) == cfg.host and "--host gpu-z" in line
    assert load_file(conf).source == str(conf)


def test_the_default_program_is_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/no/such/dflash-tui"])
    assert shlex.split(command_line(HostConfig(), Config(), "kill")) == [
        "/no/such/dflash-tui",
        "kill",
    ]
