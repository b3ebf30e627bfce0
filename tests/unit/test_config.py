from __future__ import annotations

from pathlib import Path

import pytest
from support import config_file

from dflash_tui.core.base.config import ConfigError, load_file, resolve

FULL = """
[host]
address = "gpu-box"
container = "pct:200"
[topology]
target = [0, 1, 2, 3, 4]
drafter = [5, 6, 7]
[run]
command = "python3 /root/train_dflash_pipeline.py --preset tiny"
workdir = "/workspace"
env = { PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True" }
logs = ["/workspace/train_stdout_flex6.log"]
run_root = "~/.local/state/dflash-tui/runs"
compile_cache = "/tmp/torchinductor_root"
"""


def test_design_example_loads(tmp_path: Path) -> None:
    cfg = load_file(config_file(tmp_path, FULL))
    h = cfg.host
    assert h.address == "gpu-box" and h.container == "pct:200"
    assert h.topology.drafter == (5, 6, 7)
    assert h.env == (("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),)
    assert h.logs == ("/workspace/train_stdout_flex6.log",)
    assert h.compile_cache == "/tmp/torchinductor_root"


def test_flags_override_file(tmp_path: Path) -> None:
    flags = {
        "config": str(config_file(tmp_path, FULL)),
        "topology": "0-3:4-7",
        "log": ["/a", "/b c"],
        "host": "root@10.0.0.1:2222",
    }
    h = resolve(flags).host
    assert h.topology.target == (0, 1, 2, 3) and h.logs == ("/a", "/b c")
    assert h.address == "root@10.0.0.1:2222" and h.container == "pct:200"


def test_several_hosts(tmp_path: Path) -> None:
    text = """
[[hosts]]
address = "a"
[[hosts]]
address = "b"
container = "docker:trainer"
[hosts.topology]
target = [0]
drafter = [1]
"""
    cfg = load_file(config_file(tmp_path, text))
    assert [h.label for h in cfg.hosts] == ["a", "b"]
    assert cfg.hosts[1].topology.target == (0,) and cfg.hosts[0].topology.target == (0, 1, 2, 3, 4)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[host]\naddress = 'a;rm -rf /'", "not an ssh-config alias"),
        ("[host]\ncontainer = 'pct:200; rm -rf /'", "pct id"),
        ("[host]\ncontainer = 'lxc-attach 200'", "{cmd}"),
        ('[run]\ncommand = "a\\nb"', "newline"),
        ("[topology]\ntarget = [0, -1]\ndrafter = [5]", "negative"),
        ("[topology]\ntarget = [0, 1]\ndrafter = [1]", "both"),
        ("[run]\nenv = { 'A B' = 'x' }", "variable name"),
        ("[run]\nlogs = 'x'", "must be a list"),
        ("[topology]\ntarget = 'abc'\ndrafter = [5]", "topology.target must be a list"),
        ("[topology]\ntarget = [0]\ndrafter = 5", "topology.drafter must be a list"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_bad_values_are_refused(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_file(config_file(tmp_path, text))


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        load_file(tmp_path / "nope.toml")


@pytest.mark.parametrize("host", ["$(touch /tmp/x)", "a b", "a`id`", "-oProxyCommand=x", "a\nb"])
def test_hostile_host_flag(host: str) -> None:
    with pytest.raises(ConfigError):
        resolve({"host": host})


@pytest.mark.parametrize("value", [-1.0, 0.0, 0.01, float("nan"), float("inf"), 1e9])
def test_interval_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(ConfigError, match="--interval must be between"):
        resolve({"interval": value})


def test_interval_in_range_is_kept() -> None:
    assert resolve({"interval": 0.5}).interval == 0.5
    assert resolve({}).interval == 2.0
