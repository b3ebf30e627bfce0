"""Opening one SSH connection the way ``ssh`` would, with every failure said in words.

``~/.ssh/config`` is read by asyncssh (aliases, HostName, Port, User, IdentityFile,
ConnectTimeout, ServerAlive*). A ``ProxyJump`` is connected here, hop by hop, so each hop gets
the same keys and the same host-key policy (asyncssh's own string tunnel would not pass them).
Host keys are always verified against known_hosts: a key that is not there is refused with a
message saying how to record it, unless ``accept_new`` is set, which records a NEW key (trust
on first use) and still refuses a CHANGED one.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from dflash_tui.core.link.sshlib import asyncssh, asyncssh_config, get_encryption_algs
from dflash_tui.core.link.transport import TransportError

SSHClientConfig = asyncssh_config.SSHClientConfig

ENV_CONFIG = "DFLASH_TUI_SSH_CONFIG"  # ssh config file(s), os.pathsep-separated
ENV_KNOWN_HOSTS = "DFLASH_TUI_KNOWN_HOSTS"  # known_hosts file(s), os.pathsep-separated
ENV_KEY = "DFLASH_TUI_SSH_KEY"  # private key file(s), os.pathsep-separated
MAX_HOPS = 5
# SSH handshakes under way at once in this process (each hop's too). OpenSSH's MaxStartups
# (10:30:100 by default) drops unauthenticated connections beyond 10 at random, and every host
# reached through one bastion (ProxyJump) or on one login node counts there. Below 10: the sshd
# counts a handshake a moment longer than the client waits on it, and other users' logins
# count too. A handshake takes a fraction of a second: 64 hosts still connect in about one.
MAX_HANDSHAKES = 8
# The ciphers offered when the ssh config names none: OpenSSH's default set, AES-GCM first.
# asyncssh builds a new ChaCha20 and Poly1305 object for every packet: 13 to 24 us a packet
# against 2 to 8 us for AES-GCM (bench/ssh_ciphers.py), which with many hosts streaming at
# once was most of the app's time in asyncssh. The sshd still picks among those it allows, and
# a config's `Ciphers` line is passed on as written.
CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)
_handshakes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)
# Letters, digits, ".", "_", "-" (never first: no word may read as an option), or [v6].
_ADDR = re.compile(
    r"(?:(?P<user>[A-Za-z0-9_][A-Za-z0-9._-]*)@)?"
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_][A-Za-z0-9._-]*))(?::(?P<port>\d{1,5}))?"
)


@dataclass(frozen=True)
class SshSettings:
    """How to connect; None fields fall back to the environment, then to what ssh does."""

    config_paths: tuple[str, ...] | None = None
    known_hosts: tuple[str, ...] | None = None
    client_keys: tuple[str, ...] | None = None
    accept_new: bool = False
    connect_timeout: float = 10.0  # unless the ssh config sets ConnectTimeout
    keepalive_interval: float = 5.0  # unless it sets ServerAliveInterval
    keepalive_count: int = 3  # unless it sets ServerAliveCountMax
    max_channels: int = 4  # OpenSSH allows 10 sessions per connection (MaxSessions)


@dataclass(frozen=True)
class Target:
    host: str  # an ssh-config alias or a host name / address
    port: int | None = None
    user: str | None = None


def parse_address(address: str) -> Target:
    """``[user@]host[:port]``, ``[user@][v6addr][:port]`` or an ssh-config alias."""
    m = _ADDR.fullmatch(address)
    if not m:
        raise TransportError(f"{address!r} is not [user@]host[:port] or an ssh-config alias")
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise TransportError(f"{address!r}: port {port} is out of range")
    return Target(m["v6"] or m["host"], port, m["user"])


def _env_paths(name: str) -> tuple[str, ...] | None:
    value = os.environ.get(name)
    return tuple(p for p in value.split(os.pathsep) if p) if value else None


def config_paths(settings: SshSettings) -> list[str]:
    paths = settings.config_paths or _env_paths(ENV_CONFIG)
    if paths is not None:
        return [os.path.expanduser(p) for p in paths]
    default = Path("~/.ssh/config").expanduser()
    return [str(default)] if os.access(default, os.R_OK) else []


def load_config(settings: SshSettings, target: Target) -> SSHClientConfig:
    """The ssh config as it applies to ``target`` (asyncssh's parser)."""
    try:
        # asyncssh annotates the classmethod SSHConfig.load as returning SSHConfig, not cls
        return cast(
            SSHClientConfig,
            SSHClientConfig.load(
                None,
                config_paths(settings),
                False,
                False,
                False,
                getpass.getuser(),
                target.user if target.user else (),
                target.host,
                target.port if target.port else (),
            ),
        )
    except (OSError, ValueError, asyncssh.Error) as exc:
        raise TransportError(f"ssh config: {exc}") from None


def known_hosts_files(settings: SshSettings, cfg: SSHClientConfig) -> list[str]:
    """Where host keys are looked up; the first file is where a new key is recorded."""
    files = settings.known_hosts or _env_paths(ENV_KNOWN_HOSTS)
    if files is None:
        # asyncssh's get() returns object; its parser stores these options as lists of str
        user = cast("Sequence[str] | None", cfg.get("UserKnownHostsFile"))
        glob = cast("Sequence[str] | None", cfg.get("GlobalKnownHostsFile"))
        # [] means "none": no file, still verified
        files = tuple(user) if user is not None else ("~/.ssh/known_hosts",)
        files += tuple(glob or ("/etc/ssh/ssh_known_hosts",))
    return [os.path.expanduser(f) for f in files]


def _read_known(files: list[str]) -> asyncssh.SSHKnownHosts:
    known = asyncssh.SSHKnownHosts()
    for f in files:
        try:
            known.load(Path(f).read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise TransportError(f"known_hosts {f}: {exc}") from None
    return known


def _host_pattern(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class _KeyPolicy(asyncssh.SSHClient):
    """Called by asyncssh only for a key that known_hosts does not trust."""

    def __init__(self, files: list[str], accept_new: bool, shown: str) -> None:
        self.files, self.accept_new, self.shown = files, accept_new, shown  # shown: as typed
        self.problem: str | None = None

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        pattern, fp = _host_pattern(host, port), key.get_fingerprint()
        known = _read_known(self.files).match(host, addr, port if port != 22 else None)
        kind = f"{key.get_algorithm()} {fp}"
        if any(known[:2]):
            self.problem = (
                f"the host key of {pattern} has CHANGED (now {kind}) and does not match "
                f"known_hosts ({', '.join(self.files[:1])}). This can be an attack (someone "
                "in the middle) or a reinstalled host. Refused, even with "
                "--insecure-accept-new-host-key. If you know why it changed, remove the old "
                f"line (ssh-keygen -R '{pattern}') and run `ssh {self.shown}` once to check "
                "the new one."
            )
            return False
        if not self.accept_new:
            self.problem = (
                f"the host key of {pattern} ({kind}) is not in known_hosts "
                f"({', '.join(self.files[:1]) or 'no file'}). Run `ssh {self.shown}` once to check "
                "the fingerprint and record it, or pass --insecure-accept-new-host-key to trust "
                "a new key on first use (a changed key is still refused)."
            )
            return False
        self._record(pattern, key)
        return True

    def _record(self, pattern: str, key: asyncssh.SSHKey) -> None:
        if not self.files:
            self.problem = "no known_hosts file to record the new host key in"
            raise ValueError(self.problem)
        path = Path(self.files[0])
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = key.export_public_key("openssh").decode().split()
        with open(path, "a", encoding="utf-8") as f:
            os.chmod(path, 0o600)
            f.write(f"{pattern} {line[0]} {line[1]}\n")


def offered_ciphers() -> list[str]:
    """``CIPHERS`` less those this asyncssh and cryptography build lack (a FIPS build has no
    ChaCha20): asyncssh refuses a connection whose list names one it does not know."""
    known = {alg.decode() for alg in get_encryption_algs()}
    return [c for c in CIPHERS if c in known]


def _handshake_slots() -> asyncio.Semaphore:
    """This event loop's bound on handshakes under way (a semaphore belongs to one loop)."""
    loop = asyncio.get_running_loop()
    slots = _handshakes.get(loop)
    if slots is None:
        slots = _handshakes[loop] = asyncio.Semaphore(MAX_HANDSHAKES)
    return slots


def _client_keys(settings: SshSettings) -> tuple[str, ...] | None:
    keys = settings.client_keys or _env_paths(ENV_KEY)
    return tuple(os.path.expanduser(k) for k in keys) if keys else None


async def _connect_one(
    target: Target, settings: SshSettings, tunnel: asyncssh.SSHClientConnection | None
) -> asyncssh.SSHClientConnection:
    cfg = load_config(settings, target)
    files = known_hosts_files(settings, cfg)
    policy = _KeyPolicy(files, settings.accept_new, _shown(target))
    kwargs: dict[str, object] = {
        "config": config_paths(settings),
        "known_hosts": _read_known(files),
        "client_factory": lambda: policy,
        "tunnel": tunnel,  # None: direct (a ProxyJump was connected by the caller)
    }
    if target.port:
        kwargs["port"] = target.port
    if target.user:
        kwargs["username"] = target.user
    if keys := _client_keys(settings):
        kwargs["client_keys"] = list(keys)
    if cfg.get("ConnectTimeout") is None:
        kwargs["connect_timeout"] = settings.connect_timeout
    if cfg.get("ServerAliveInterval") is None:
        kwargs["keepalive_interval"] = settings.keepalive_interval
    if cfg.get("ServerAliveCountMax") is None:
        kwargs["keepalive_count_max"] = settings.keepalive_count
    if cfg.get("Ciphers") is None and (ciphers := offered_ciphers()):
        kwargs["encryption_algs"] = ciphers
    name = _describe(target)
    try:
        async with _handshake_slots():  # the connect timeout runs once the slot is ours
            return await asyncssh.connect(target.host, **kwargs)
    except asyncssh.HostKeyNotVerifiable as exc:
        raise TransportError(f"{name}: {policy.problem or exc}") from None
    except asyncssh.PermissionDenied:
        raise TransportError(
            f"{name}: authentication refused (no key accepted). Check that `ssh {target.host}` "
            "works without a password: IdentityFile in ~/.ssh/config, or ssh-agent."
        ) from None
    except asyncio.TimeoutError:
        raise TransportError(f"{name}: no answer within the connect timeout") from None
    except OSError as exc:
        raise TransportError(f"{name}: cannot connect: {exc.strerror or exc}") from None
    except (asyncssh.Error, ValueError) as exc:
        raise TransportError(f"{name}: {exc}") from None


def _shown(target: Target) -> str:
    return f"{target.user}@{target.host}" if target.user else target.host


def _describe(target: Target) -> str:
    user = f"{target.user}@" if target.user else ""
    port = f":{target.port}" if target.port else ""
    return f"ssh {user}{target.host}{port}"


async def open_connection(
    address: str, settings: SshSettings, depth: int = 0
) -> tuple[asyncssh.SSHClientConnection, list[asyncssh.SSHClientConnection]]:
    """The connection to ``address`` and the ProxyJump connections under it (to close later)."""
    target = parse_address(address)
    jump = load_config(settings, target).get("ProxyJump")
    jumps: list[asyncssh.SSHClientConnection] = []
    tunnel = None
    try:
        if isinstance(jump, str) and jump.lower() != "none":
            if depth >= MAX_HOPS:
                raise TransportError(f"ProxyJump: more than {MAX_HOPS} hops (a loop?)")
            for hop in jump.split(","):
                if tunnel is None:
                    tunnel, under = await open_connection(hop, settings, depth + 1)
                    jumps += under
                else:
                    tunnel = await _connect_one(parse_address(hop), settings, tunnel)
                jumps.append(tunnel)
        return await _connect_one(target, settings, tunnel), jumps
    except BaseException:
        for conn in reversed(jumps):
            conn.close()
        raise
