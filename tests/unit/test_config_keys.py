"""Config typos are errors naming the nearest known key; the shipped example is complete and
parses; the default config file; unique host labels."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from support import config_file

from dflash_tui.cli.config_cmd import example_text
from dflash_tui.cli.main import build_parser, main
from dflash_tui.core.base.config import ConfigError, load_file, resolve
from dflash_tui.core.base.config_keys import ANY, HOST, TOP, Schema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "config.example.toml"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[topolgy]\ntarget = [0]", "unknown table 'topolgy' (did you mean 'topology'?)"),
        ("[run]\ncomand = 'x'", "unknown key 'run.comand' (did you mean 'run.command'?)"),
        ("[host]\nconatiner = 'pct:1'", "unknown key 'host.conatiner' (did you mean"),
        ("[[hots]]\naddress = 'a'", "unknown table 'hots' (did you mean 'hosts'?)"),
        ("[[hosts]]\nadress = 'a'", "'hosts[0].adress' (did you mean 'hosts[0].address'?)"),
        ("[[hosts]]\n[hosts.runn]\ncommand = 'x'", "table 'hosts[0].runn' (did you mean"),
        (
            "[[hosts]]\nlabel = 'a'\n[[hosts]]\nlabel = 'b'\n[hosts.topology]\ntargets = [0]",
            "unknown key 'hosts[1].topology.targets' (did you mean 'hosts[1].topology.target'?)",
        ),
        ("[[hosts]]\n[hosts.restart]\nretry = 1", "'hosts[0].restart.retry' (did you mean"),
        (
            "zzz = 2",
            "unknown key 'zzz' (known: host, hosts, topology, run, restart, scheduler, slurm, "
            "alerts, record, thresholds, keys, jobs)",
        ),
    ],
)
def test_an_unknown_table_or_key_at_any_level_is_named(
    tmp_path: Path, text: str, needle: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_file(config_file(tmp_path, text))


def test_every_unknown_key_is_named_at_once_with_the_file(tmp_path: Path) -> None:
    path = config_file(tmp_path, "[topolgy]\ntarget = [0]\n[run]\ncomand = 'x'\n")
    with pytest.raises(ConfigError) as err:
        load_file(path)
    assert str(err.value).startswith(f"config {path}: ")
    assert "'topolgy'" in str(err.value) and "'run.comand'" in str(err.value)


def test_free_form_env_keys_are_the_users(tmp_path: Path) -> None:
    cfg = load_file(config_file(tmp_path, "[run.env]\nANY_NAME = '1'\n"))
    assert cfg.host.env == (("ANY_NAME", "1"),)


def test_a_typo_stops_launch_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt key (`comand = "x"`) is an error, never the bundled demo launched with exit 0."""
    ran: list[object] = []
    monkeypatch.setattr("dflash_tui.cli.run.run_control", lambda cfg, args: ran.append(cfg) or 0)
    path = config_file(tmp_path, "[topolgy]\ntarget = [0]\n[run]\ncomand = 'x'\n")
    assert main(["--config", str(path), "launch"]) == 2
    assert ran == []
    err = capsys.readouterr().err
    assert "did you mean 'topology'?" in err and "did you mean 'run.command'?" in err


def _keys(schema: Schema, where: str = "") -> set[str]:
    """Every table and key path the schema knows ([[hosts]] entries as hosts[])."""
    out = set()
    for key, sub in schema.items():
        name = f"{where}.{key}" if where else key
        out.add(name)
        if isinstance(sub, dict) and sub is not ANY:
            out |= _keys(sub, name + ("[]" if sub is HOST and key == "hosts" else ""))
    return out


def _paths(doc: Any, where: str = "") -> set[str]:
    out = set()
    for key, value in doc.items():
        name = f"{where}.{key}" if where else key
        out.add(name)
        if isinstance(value, dict) and key != "env":
            out |= _paths(value, name)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for v in value:
                out |= _paths(v, name + "[]")
    return out


def test_the_shipped_example_parses_and_sets_every_key() -> None:
    assert example_text() == EXAMPLE.read_text()  # the file docs/ shows is the one printed
    cfg = load_file(EXAMPLE)
    assert [h.label for h in cfg.hosts] == [
        "this-machine",
        "gpu-a",
        "trainer-b",
        "node-0",
        "node-1",
        "cluster",
    ]
    b = cfg.hosts[2]
    assert b.topology.spec() == "0-1:2" and b.run_root == "/srv/dflash/runs"
    assert b.restart.enabled and b.keep_runs == 20
    doc = tomllib.loads(EXAMPLE.read_text())
    missing = _keys(TOP) - _paths(doc) - {"host", "host.address", "host.container", "host.label"}
    missing -= {k for k in missing if k.startswith("host.")}  # [host] is shown commented out
    assert missing == set()
    for key in HOST:  # and the commented [host] table shows its own keys
        if HOST[key] is None:
            assert f"# {key} = " in EXAMPLE.read_text()


def test_config_example_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--example"]) == 0
    assert capsys.readouterr().out == example_text()


def test_the_default_config_file_is_read_when_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert resolve({}).source is None  # absent: the defaults
    path = tmp_path / "dflash-tui" / "config.toml"
    path.parent.mkdir()
    path.write_text("[run]\nrun_root = '/from/default'\n")
    cfg = resolve({})
    assert cfg.source == str(path) and cfg.host.run_root == "/from/default"
    other = config_file(tmp_path, "[run]\nrun_root = '/from/flag'\n")
    assert resolve({"config": str(other)}).host.run_root == "/from/flag"  # --config wins
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    assert resolve({}).source is None


def test_help_names_the_default_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    parser = build_parser()
    (config,) = (a for a in parser._actions if "--config" in a.option_strings)
    assert "$XDG_CONFIG_HOME/dflash-tui/config.toml" in (config.help or "")
    assert f"{tmp_path}/dflash-tui/config.toml, when it exists" in (config.help or "")
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    assert "when it exists" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[hosts]]\n[[hosts]]\n", "hosts[0] and hosts[1] are both called 'local'"),
        (
            "[[hosts]]\naddress = 'a'\n[[hosts]]\nlabel = 'b'\n[[hosts]]\naddress = 'b'\n",
            "hosts[1] and hosts[2] are both called 'b'",
        ),
        ("[host]\naddress = 'a'\n[[hosts]]\naddress = 'b'\n", "[host] (one machine) or [[hosts]]"),
        ("[[hosts]]\nlabel = '-x'\n", "hosts[0].label '-x'"),
        ("[[hosts]]\nlabel = 'a b'\n", "hosts[0].label 'a b'"),
    ],
)
def test_host_labels_are_unique_and_plain(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_file(config_file(tmp_path, text))
