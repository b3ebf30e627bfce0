"""Opening SSH connections, without a network: addresses, ssh config, known_hosts policy."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from dflash_tui.core.link.ssh import SshTransport, _exit_code
from dflash_tui.core.link.ssh_connect import (
    SshSettings,
    Target,
    _KeyPolicy,
    config_paths,
    known_hosts_files,
    load_config,
    parse_address,
)
from dflash_tui.core.link.transport import TransportError


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("gpu-box", Target("gpu-box")),
        ("root@10.1.2.6", Target("10.1.2.6", None, "root")),
        ("root@10.1.2.6:2222", Target("10.1.2.6", 2222, "root")),
        ("[::1]:22", Target("::1", 22)),
        ("u_1@host.example.org", Target("host.example.org", None, "u_1")),
    ],
)
def test_addresses(address: str, target: Target) -> None:
    assert parse_address(address) == target


@pytest.mark.parametrize(
    "address",
    ["", "-oProxyCommand=x", "a;b", "a b", "h\n", "$(id)", "u@-h", "h:0", "h:99999", "a@b@c"],
)
def test_bad_addresses(address: str) -> None:
    with pytest.raises(TransportError):
        parse_address(address)


def test_a_bad_address_is_refused_before_any_connection() -> None:
    with pytest.raises(TransportError):
        SshTransport("h;touch /tmp/x")


def write_config(tmp_path: Path, text: str) -> SshSettings:
    cfg = tmp_path / "config"
    cfg.write_text(text)
    return SshSettings(config_paths=(str(cfg),))


def test_config_alias_is_resolved(tmp_path: Path) -> None:
    s = write_config(
        tmp_path,
        "Host box\n  HostName 10.0.0.7\n  Port 2200\n  User ops\n  ProxyJump bastion\n",
    )
    cfg = load_config(s, parse_address("box"))
    assert (cfg.get("Hostname"), cfg.get("Port"), cfg.get("User")) == ("10.0.0.7", 2200, "ops")
    assert cfg.get("ProxyJump") == "bastion"


def test_env_points_at_another_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DFLASH_TUI_SSH_CONFIG", str(tmp_path / "c"))
    assert config_paths(SshSettings()) == [str(tmp_path / "c")]


def test_known_hosts_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DFLASH_TUI_KNOWN_HOSTS", raising=False)
    s = write_config(tmp_path, "Host a\n  UserKnownHostsFile /k1 /k2\nHost b\n  Port 1\n")
    assert known_hosts_files(s, load_config(s, Target("a")))[:2] == ["/k1", "/k2"]
    default = known_hosts_files(s, load_config(s, Target("b")))
    assert default[0].endswith("/.ssh/known_hosts") and "/etc/ssh/ssh_known_hosts" in default
    s = write_config(tmp_path, "Host *\n  UserKnownHostsFile none\n")
    # "none" means no user file, NOT "do not verify": keys are still checked (and refused).
    assert known_hosts_files(s, load_config(s, Target("x"))) == ["/etc/ssh/ssh_known_hosts"]
    monkeypatch.setenv("DFLASH_TUI_KNOWN_HOSTS", "/only")
    assert known_hosts_files(s, load_config(s, Target("x"))) == ["/only"]


@pytest.fixture
def key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519").convert_to_public()


def test_unknown_key_refused_then_recorded_with_accept_new(
    tmp_path: Path, key: asyncssh.SSHKey
) -> None:
    kh = tmp_path / "ssh" / "known_hosts"
    policy = _KeyPolicy([str(kh)], accept_new=False, shown="box")
    assert not policy.validate_host_public_key("10.0.0.7", "10.0.0.7", 2200, key)
    assert (
        policy.problem and "not in known_hosts" in policy.problem and "`ssh box`" in policy.problem
    )
    assert not kh.exists()
    policy = _KeyPolicy([str(kh)], accept_new=True, shown="box")
    assert policy.validate_host_public_key("10.0.0.7", "10.0.0.7", 2200, key)
    line = kh.read_text()
    assert line.startswith("[10.0.0.7]:2200 ssh-ed25519 ") and oct(kh.stat().st_mode)[-3:] == "600"
    known = asyncssh.read_known_hosts(str(kh)).match("10.0.0.7", "10.0.0.7", 2200)
    assert key in known[0]


def test_changed_key_refused_even_with_accept_new(tmp_path: Path, key: asyncssh.SSHKey) -> None:
    kh = tmp_path / "known_hosts"
    old = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    kh.write_text(f"gpu-box {old}")
    policy = _KeyPolicy([str(kh)], accept_new=True, shown="gpu-box")
    assert not policy.validate_host_public_key("gpu-box", "10.0.0.7", 22, key)
    assert policy.problem and "CHANGED" in policy.problem and "ssh-keygen -R" in policy.problem
    assert kh.read_text() == f"gpu-box {old}"


class _Proc:
    def __init__(self, status: int | None, sig: tuple[str, bool, str, str] | None) -> None:
        self.exit_status, self.exit_signal = status, sig


def test_exit_codes() -> None:
    assert _exit_code(_Proc(0, None)) == 0  # type: ignore[arg-type]
    assert _exit_code(_Proc(-1, ("KILL", False, "", ""))) == 137  # type: ignore[arg-type]
    assert _exit_code(_Proc(None, None)) is None  # type: ignore[arg-type]


def test_only_ciphers_this_build_knows_are_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cryptography build without ChaCha20 (FIPS): the rest are offered, in order, not a list
    asyncssh would refuse the connection over."""
    from dflash_tui.core.link import ssh_connect

    assert ssh_connect.offered_ciphers() == list(ssh_connect.CIPHERS)
    no_chacha = [b"aes128-gcm@openssh.com", b"aes256-ctr", b"aes256-gcm@openssh.com"]
    monkeypatch.setattr(ssh_connect, "get_encryption_algs", lambda: no_chacha)
    assert ssh_connect.offered_ciphers() == [
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        "aes256-ctr",
    ]
