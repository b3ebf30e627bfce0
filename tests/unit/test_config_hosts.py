"""`--host X` with a multi-host config selects the [[hosts]] entry whose label or address is X;
an address in no entry gets the top-level settings, with a note."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import config_file

from dflash_tui.cli.main import main
from dflash_tui.core.base.config import ConfigError, resolve

MULTI = """
[run]
run_root = "/top/runs"
[[hosts]]
address = "gpu-a"
[hosts.run]
run_root = "/a/runs"
[[hosts]]
label = "b"
address = "gpu-b"
container = "pct:201"
[hosts.topology]
target = [0]
drafter = [1]
[hosts.run]
run_root = "/b/runs"
command = "train-b"
[[hosts]]
label = "home"
"""


@pytest.fixture
def multi(tmp_path: Path) -> str:
    return str(config_file(tmp_path, MULTI, "multi.toml"))


@pytest.mark.parametrize("wanted", ["gpu-b", "b"])
def test_host_selects_the_entry_by_address_or_label(multi: str, wanted: str) -> None:
    cfg = resolve({"config": multi, "host": wanted})
    (h,) = cfg.hosts
    assert (h.label, h.address, h.container) == ("b", "gpu-b", "pct:201")
    assert h.run_root == "/b/runs" and h.command == "train-b" and h.topology.spec() == "0:1"
    assert cfg.notes == ()


def test_a_label_selects_a_local_entry(multi: str) -> None:
    (h,) = resolve({"config": multi, "host": "home"}).hosts
    assert h.address is None and h.run_root == "/top/runs"


def test_other_flags_still_override_the_selected_entry(multi: str) -> None:
    (h,) = resolve({"config": multi, "host": "gpu-a", "run_root": "/flag"}).hosts
    assert h.address == "gpu-a" and h.run_root == "/flag"


def test_an_address_in_no_entry_gets_the_top_level_settings_and_a_note(
    multi: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = resolve({"config": multi, "host": "root@gpu-c"})
    (h,) = cfg.hosts
    assert h.address == "root@gpu-c" and h.container is None and h.run_root == "/top/runs"
    assert h.topology.spec() == "0-4:5-7"
    (note,) = cfg.notes
    assert "--host root@gpu-c is in no [[hosts]] entry" in note and "top-level settings" in note
    monkeypatch.setattr("dflash_tui.cli.config_cmd.run_config", lambda cfg, args: 0)
    assert main(["--config", multi, "config", "--host", "root@gpu-c"]) == 0
    assert "dflash-tui: note: --host root@gpu-c is in no [[hosts]]" in capsys.readouterr().err


def test_an_address_shared_by_two_entries_needs_a_label(tmp_path: Path) -> None:
    p = config_file(
        tmp_path,
        "[[hosts]]\nlabel = 'x'\naddress = 'box'\n[[hosts]]\nlabel = 'y'\naddress = 'box'\n",
    )
    needle = "2 [[hosts]] entries have that address (x, y)"
    with pytest.raises(ConfigError, match=re.escape(needle)):
        resolve({"config": str(p), "host": "box"})
    assert resolve({"config": str(p), "host": "y"}).host.label == "y"


def test_without_hosts_the_one_host_moves_to_the_address(tmp_path: Path) -> None:
    p = config_file(
        tmp_path, "[host]\naddress = 'gpu-a'\ncontainer = 'pct:200'\n[run]\nrun_root = '/r'\n"
    )
    (h,) = resolve({"config": str(p), "host": "gpu-z"}).hosts
    assert (h.address, h.container, h.run_root) == ("gpu-z", "pct:200", "/r")
    (h,) = resolve({"host": "local"}).hosts  # no config file: an address, never a label
    assert h.address == "local"
