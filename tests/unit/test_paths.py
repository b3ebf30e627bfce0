"""The config and state folders come from platformdirs and are, on Linux, the XDG paths the
docs name: an XDG variable wins, else the folder under the home directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dflash_tui.app.host.logs.export import save_lines
from dflash_tui.cli.supervise import log_path
from dflash_tui.core.base.config import resolve
from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.base.paths import config_dir, state_dir


def test_xdg_variables_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert config_dir() == tmp_path / "cfg" / "dflash-tui"
    assert state_dir() == tmp_path / "state" / "dflash-tui"


def test_home_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir() == tmp_path / ".config" / "dflash-tui"
    assert state_dir() == tmp_path / ".local" / "state" / "dflash-tui"


def test_every_user_of_the_folders_follows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DFLASH_SUPERVISE_LOG", raising=False)
    conf = tmp_path / "cfg" / "dflash-tui" / "config.toml"
    conf.parent.mkdir(parents=True)
    conf.write_text("[run]\nrun_root = '/r'\n")
    assert resolve({}).source == str(conf)
    saved = save_lines(["a line"], "/x/train.log")
    assert saved.parent == tmp_path / "state" / "dflash-tui" / "saved"
    remote = HostConfig(address="gpu-a")
    assert log_path(remote).parent == tmp_path / "state" / "dflash-tui"
