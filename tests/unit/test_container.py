"""Container wrappers: presets and templates keep the command one quoted argument."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from dflash_tui.core.base.config import ConfigError
from dflash_tui.core.link.container import Container, parse, wrapper

# Stand-ins that run the command on this machine exactly as a container would receive it.
FAKE_PCT = '#!/bin/sh\n[ "$1" = exec ] || exit 2\nshift 2\n[ "$1" = -- ] && shift\nexec "$@"\n'
FAKE_DOCKER = '#!/bin/sh\n[ "$1 $2" = "exec -i" ] || exit 2\nshift 3\nexec "$@"\n'
NASTY = "a'b\"c $(touch {t}) `touch {t}` ; touch {t} \\ \t end"


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("pct", FAKE_PCT), ("docker", FAKE_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path


def test_presets_spell_the_tools_commands() -> None:
    assert wrapper("pct:200")("echo hi") == "pct exec 200 -- sh -c 'echo hi'"  # type: ignore[misc]
    assert wrapper("docker:trainer")("echo hi") == "docker exec -i trainer sh -c 'echo hi'"  # type: ignore[misc]
    assert wrapper("lxc-attach -n 7 -- {cmd}")("id") == "lxc-attach -n 7 -- sh -c id"  # type: ignore[misc]
    assert wrapper(None) is None and wrapper("") is None


@pytest.mark.parametrize("spec", ["pct:200", "docker:trainer", "env DFLASH=1 {cmd}"])
def test_a_hostile_command_arrives_intact(tools: Path, spec: str) -> None:
    """Through the wrapper and a real sh, the argument reaches the command byte for byte."""
    target = tools / "pwned"
    text = NASTY.replace("{t}", str(target))
    wrapped = wrapper(spec)(f"printf %s {shlex.quote(text)}")  # type: ignore[misc]
    out = subprocess.run(["sh", "-c", wrapped], capture_output=True, text=True, check=True)
    assert out.stdout == text and not target.exists()


@pytest.mark.parametrize(
    "spec",
    [
        "pct:200; rm -rf /",
        "pct:abc",
        "pct:",
        "docker:-it",
        "docker:a b",
        "docker:x$(id)",
        "sh -c '{cmd}'",
        'sh -c "{cmd}"',
        "x{cmd}",
        "{cmd} {cmd}",
        "env A=1\n{cmd}",
        "nothing to replace",
        "unbalanced ' {cmd}",
    ],
)
def test_unsafe_specs_are_refused(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse(spec)


def test_parse() -> None:
    assert parse("pct:200") == Container("pct", "200", "pct:200")
    assert parse("docker:web") == Container("docker", "web", "docker:web")
    assert parse("nsenter -t 9 -p -m {cmd}") == Container(
        "template", None, "nsenter -t 9 -p -m {cmd}"
    )
    assert parse("pct:200").label == "pct 200"  # type: ignore[union-attr]


def test_cgroup_ownership() -> None:
    pct = parse("pct:200")
    assert pct is not None
    assert pct.owns_cgroup("0::/lxc/200/ns/user.slice/session-1.scope") is True
    assert pct.owns_cgroup("12:pids:/lxc.payload.200/init.scope") is True
    assert pct.owns_cgroup("0::/lxc/2001/ns/init.scope") is False
    assert pct.owns_cgroup("0::/system.slice/ssh.service") is False
    assert pct.owns_cgroup("") is None  # no evidence either way
    docker = parse("docker:" + "ab12" * 16)
    assert docker is not None and docker.owns_cgroup("0::/docker/" + "ab12" * 16) is True
    assert docker.owns_cgroup("0::/docker/" + "cd34" * 16) is False
    by_name = parse("docker:trainer")
    assert by_name is not None and by_name.owns_cgroup("0::/docker/" + "cd34" * 16) is None
