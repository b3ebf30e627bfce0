"""Hostile input never runs: bad hosts and container ids are refused, other values are quoted.

Every attempt below would create a file if any shell evaluated it; the tests check that no
file appears, through the real CLI and the real sshd, with and without a container preset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.transport import TransportError

pytestmark = pytest.mark.ssh

# Stand-ins for the container tools: they run the command on the host, as given.
FAKE_PCT = '#!/bin/sh\n[ "$1" = exec ] || exit 2\nshift 2\n[ "$1" = -- ] && shift\nexec "$@"\n'
FAKE_DOCKER = '#!/bin/sh\n[ "$1 $2" = "exec -i" ] || exit 2\nshift 3\nexec "$@"\n'


@pytest.fixture
def tools(ssh_env: LoopbackSshd) -> LoopbackSshd:
    for name, text in (("pct", FAKE_PCT), ("docker", FAKE_DOCKER)):
        path = ssh_env.root / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    return ssh_env


def evil(where: Path, tag: str) -> tuple[str, Path]:
    """A value that creates ``where/pwned-TAG`` if a shell ever evaluates it."""
    target = where / f"pwned-{tag}"
    return f"x$(touch {target})`touch {target}`;touch {target}", target


@pytest.mark.parametrize(
    "flags",
    [
        ("--host", "h;touch {t}"),
        ("--host", "$(touch {t})"),
        ("--host", "-oProxyCommand=touch_{t}"),
        ("--host", "a\nb"),
        ("--container", "pct:200; touch {t}"),
        ("--container", "docker:web$(touch {t})"),
        ("--container", "sh -c '{cmd}'; touch {t}"),
        ("--container", "env A=1 {cmd}\ntouch {t}"),
        ("--command", "sleep 1\ntouch {t}"),
        ("--log", "/tmp/a\ntouch {t}"),
    ],
)
def test_refused_before_anything_runs(
    tools: LoopbackSshd, tmp_path: Path, flags: tuple[str, str]
) -> None:
    target = tmp_path / "pwned"
    value = flags[1].replace("{t}", str(target))
    host = ("--host", ALIAS) if flags[0] != "--host" else ()
    res = cli("status", "--json", f"{flags[0]}={value}", *host)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "dflash-tui:" in res.stderr and not target.exists()


@pytest.mark.parametrize("container", [None, "pct:200", "docker:trainer", "env X=1 {cmd}"])
def test_values_are_quoted_over_ssh(
    tools: LoopbackSshd, tmp_path: Path, container: str | None
) -> None:
    log, t1 = evil(tmp_path, "log")
    root, t2 = evil(tmp_path, "root")
    args = ["status", "--json", "--host", ALIAS, "--log", log, "--run-root", root]
    res = cli(*args, *(("--container", container) if container else ()))
    doc = json.loads(res.stdout)
    assert [lg["path"] for lg in doc["run"]["logs"]] == [log]  # read verbatim, as a path
    assert not t1.exists() and not t2.exists()


async def test_transport_refuses_a_hostile_address() -> None:
    for address in ("h;touch /tmp/x", "-oProxyCommand=x", "a b", "a\nb", "$(id)"):
        with pytest.raises(TransportError, match="not \\[user@\\]host"):
            SshTransport(address)
