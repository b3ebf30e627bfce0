"""Many hosts connecting at once through one sshd (a bastion, a login node): the handshakes
under way are bounded (ssh_connect.MAX_HANDSHAKES), so the sshd's MaxStartups does not drop
them. Here the sshd allows only 2 unauthenticated connections at a time (``MaxStartups 2``,
where OpenSSH's default starts dropping at 10) and the bound is one below it: the sshd learns
that a handshake finished a moment after the client does, so a bound equal to MaxStartups
still loses one now and then."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from conftest import local_view, make_sshd
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.link import ssh_connect
from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.transport import TransportError

pytestmark = pytest.mark.ssh

HOSTS = 8


@pytest.fixture(scope="module")
def strict_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    base = make_sshd(tmp_path_factory.mktemp("strict-sshd"))
    server = LoopbackSshd(
        base.root, base.path_prefix, base.session_env, extra_config="MaxStartups 2\n"
    )
    server.start()
    yield server
    server.stop()


async def connect_all() -> list[str]:
    """HOSTS transports to the same sshd connecting at once: each one's answer or error."""
    transports = [SshTransport(ALIAS) for _ in range(HOSTS)]

    async def one(t: SshTransport) -> str:
        try:
            return (await t.run("echo up", timeout=30)).stdout.strip()
        except TransportError as exc:
            return str(exc)
        finally:
            await t.close()

    return await asyncio.gather(*(one(t) for t in transports))


async def test_handshakes_within_the_bound_all_get_through(
    strict_sshd: LoopbackSshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_view(strict_sshd, monkeypatch)
    monkeypatch.setattr(ssh_connect, "MAX_HANDSHAKES", 1)
    assert await connect_all() == ["up"] * HOSTS


async def test_unbounded_handshakes_are_dropped_by_this_sshd(
    strict_sshd: LoopbackSshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the same setup: were every handshake let through at once, this sshd
    would drop some (what the bound is for)."""
    local_view(strict_sshd, monkeypatch)
    monkeypatch.setattr(ssh_connect, "MAX_HANDSHAKES", HOSTS)
    answers = await connect_all()
    assert answers.count("up") < HOSTS, answers
