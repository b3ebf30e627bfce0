"""SshTransport against the loopback sshd: one connection, channel cap, host keys, ProxyJump."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import asyncssh
import pytest
from conftest import cli
from loopback_sshd import ALIAS, LoopbackSshd

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.link.feed import probe_command
from dflash_tui.core.link.ssh import SshTransport
from dflash_tui.core.link.ssh_connect import ENV_CONFIG, SshSettings, open_connection
from dflash_tui.core.link.transport import TransportError
from dflash_tui.core.probe.bundle import probe_source

pytestmark = pytest.mark.ssh


async def test_run_and_stream_share_one_connection(ssh_env: LoopbackSshd) -> None:
    t = SshTransport(ALIAS)
    try:
        res = await t.run("echo out; echo err >&2; exit 3")
        assert (res.rc, res.stdout, res.stderr) == (3, "out\n", "err\n")
        assert (await t.run("cat", stdin=b"through stdin")).stdout == "through stdin"
        assert (await t.run("kill -9 $$")).rc == 137  # a signal reads as 128+N
        cmd = probe_command(t.python, HostConfig(), interval=0.2)
        seen = []
        async for line in t.stream(cmd, probe_source()):
            seen.append(json.loads(line))
            if len(seen) == 3:
                break
        assert {s["probe_mode"] for s in seen} == {"python"}
        assert seen[0]["telemetry"]["source"] == "nvidia-smi"  # the fake, via the session PATH
        assert t.connected and t.link.connects == 1
    finally:
        await t.close()
    assert not t.connected


async def test_channels_are_capped_below_max_sessions(ssh_env: LoopbackSshd) -> None:
    """12 commands at once on one connection: OpenSSH allows 10 sessions, the cap keeps 4."""
    t = SshTransport(ALIAS, settings=SshSettings(max_channels=4))
    try:
        t0 = time.monotonic()
        results = await asyncio.gather(*(t.run(f"sleep 0.3; echo {i}") for i in range(12)))
        elapsed = time.monotonic() - t0
    finally:
        await t.close()
    assert [r.stdout.strip() for r in results] == [str(i) for i in range(12)]
    assert elapsed >= 0.9  # three rounds of four
    assert t.link.connects == 1


async def test_unknown_host_key_is_refused_with_advice(ssh_env: LoopbackSshd) -> None:
    t = SshTransport(f"{ALIAS}-unknown")
    with pytest.raises(TransportError) as err:
        await t.run("true")
    msg = str(err.value)
    assert "is not in known_hosts" in msg and "ssh-ed25519 SHA256:" in msg
    assert f"`ssh {ALIAS}-unknown`" in msg and "--insecure-accept-new-host-key" in msg
    assert ssh_env.empty_known_hosts.read_text() == ""  # nothing recorded


async def test_accept_new_records_a_new_key_but_never_a_changed_one(
    ssh_env: LoopbackSshd,
) -> None:
    t = SshTransport(f"{ALIAS}-unknown", accept_new=True)
    try:
        assert (await t.run("echo ok")).stdout == "ok\n"
    finally:
        await t.close()
        recorded = ssh_env.empty_known_hosts.read_text()
        ssh_env.empty_known_hosts.write_text("")
    assert recorded == ssh_env.host_public_line
    # A different key on record for the host: CHANGED, refused even with accept_new.
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    ssh_env.empty_known_hosts.write_text(f"[127.0.0.1]:{ssh_env.port} {other}")
    try:
        t = SshTransport(f"{ALIAS}-unknown", accept_new=True)
        with pytest.raises(TransportError, match="has CHANGED"):
            await t.run("true")
    finally:
        ssh_env.empty_known_hosts.write_text("")


async def test_proxyjump_is_connected_hop_by_hop(ssh_env: LoopbackSshd) -> None:
    t = SshTransport(f"{ALIAS}-jump")
    try:
        assert (await t.run("echo via-jump")).stdout == "via-jump\n"
        assert len(t.link._jumps) == 1
    finally:
        await t.close()


async def test_unreachable_port_says_so(ssh_env: LoopbackSshd) -> None:
    from loopback_sshd import free_port

    t = SshTransport(f"{ALIAS}:{free_port()}", settings=SshSettings(connect_timeout=3))
    with pytest.raises(TransportError, match="cannot connect"):
        await t.run("true")
    assert not t.connected


def test_cli_flag_accepts_a_new_key(ssh_env: LoopbackSshd) -> None:
    try:
        refused = cli("status", "--json", "--host", f"{ALIAS}-unknown")
        assert "not in known_hosts" in refused.stdout and refused.returncode == 1
        flag = "--insecure-accept-new-host-key"
        ok = cli("status", "--json", "--host", f"{ALIAS}-unknown", flag)
        assert json.loads(ok.stdout)["gpus"], ok.stderr
        assert ssh_env.empty_known_hosts.read_text() == ssh_env.host_public_line
    finally:
        ssh_env.empty_known_hosts.write_text("")


async def _ciphers() -> tuple[str, str]:
    conn, jumps = await open_connection(ALIAS, SshSettings())
    try:
        return conn.get_extra_info("send_cipher"), conn.get_extra_info("recv_cipher")
    finally:
        conn.close()
        assert not jumps


async def test_aes_gcm_is_offered_first_unless_the_config_names_ciphers(
    ssh_env: LoopbackSshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `Ciphers` in the ssh config: AES-GCM, which asyncssh encrypts several times cheaper
    a packet than ChaCha20-Poly1305 (OpenSSH's first choice); a `Ciphers` line is obeyed."""
    assert await _ciphers() == ("aes128-gcm@openssh.com",) * 2
    config = tmp_path / "ssh_config"
    own = [Path(p).read_text() for p in os.environ[ENV_CONFIG].split(os.pathsep)]
    config.write_text("Ciphers chacha20-poly1305@openssh.com\n" + "".join(own))
    monkeypatch.setenv(ENV_CONFIG, str(config))
    assert await _ciphers() == ("chacha20-poly1305@openssh.com",) * 2
