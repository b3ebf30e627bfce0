"""A real OpenSSH sshd on 127.0.0.1 for tests and the bench (Debian's /usr/sbin/sshd, as root).

Everything lives in one throwaway directory: host key, user key, authorized_keys, the sshd
config, a client ssh config with aliases, and a known_hosts file that trusts the host key.
``LoopbackSshd.stop`` ends the listener and every session process it forked, which is what
"the sshd went away" looks like to a client (the TCP connections close).

A machine without OpenSSH (the device machine of bench/device_scale.sh) runs a carried one
(bench/device_sshd_kit.sh): DFLASH_TUI_TEST_SSHD names its sshd (an absolute path: sshd
re-executes itself), DFLASH_TUI_TEST_SSHD_LIBS its libraries (LD_LIBRARY_PATH of the sshd
alone; sshd builds its sessions' environment afresh) and DFLASH_TUI_TEST_SESSION_PATH folders
put before the sessions' PATH (where that machine's python3 lives). With DFLASH_TUI_TEST_SSHD
set, what such a bare box lacks is made first: the privilege-separation user and folder, and
an unlocked root account (sshd without PAM refuses a locked one even for keys).
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import subprocess
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

SSHD = os.environ.get("DFLASH_TUI_TEST_SSHD") or "/usr/sbin/sshd"
SSHD_LIBS = os.environ.get("DFLASH_TUI_TEST_SSHD_LIBS", "")
SESSION_PATH = os.environ.get("DFLASH_TUI_TEST_SESSION_PATH", "")
ALIAS = "dflash-test"
PRIVSEP_USER = "sshd"  # Debian's build: SSH_PRIVSEP_USER, chrooted into PRIVSEP_DIR
PRIVSEP_DIR = "/run/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sshd_unavailable() -> str | None:
    """Why a loopback sshd cannot run here (None: it can)."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is missing: install openssh-server (.ci/run does)"
    if os.geteuid() != 0:
        return "the loopback sshd needs root (it logs in as root on 127.0.0.1)"
    shell = pwd.getpwuid(0).pw_shell or "/bin/sh"
    if not os.access(shell, os.X_OK):
        return f"root's login shell {shell} is missing (sshd refuses the login)"
    return None


def add_privsep_user(passwd: Path) -> bool:
    """Add the unprivileged user sshd's pre-auth child runs as, when ``passwd`` lacks it: a
    free system uid, nogroup's gid, no shell. True when a line was added."""
    lines = passwd.read_text().splitlines()
    entries = [line.split(":") for line in lines if line.count(":") >= 6]
    if any(e[0] == PRIVSEP_USER for e in entries):
        return False
    taken = {int(e[2]) for e in entries if e[2].isdigit()}
    uid = next(u for u in range(100, 1000) if u not in taken)
    entry = f"{PRIVSEP_USER}:x:{uid}:65534::{PRIVSEP_DIR}:/usr/sbin/nologin"
    passwd.write_text("\n".join([*lines, entry]) + "\n")
    return True


def unlock_root(shadow: Path) -> bool:
    """Turn root's locked password field ("!..."), which sshd without PAM treats as a locked
    account, into "*" (no password can match; keys still log in). True when changed."""
    lines = shadow.read_text().splitlines()
    out = []
    for line in lines:
        name, _, rest = line.partition(":")
        if name == "root" and rest.startswith("!"):
            line = "root:*:" + rest.partition(":")[2]
        out.append(line)
    if out == lines:
        return False
    shadow.write_text("\n".join(out) + "\n")
    return True


def prepare_bare_host() -> None:
    """What a carried sshd needs on a box that never had OpenSSH installed (only when
    DFLASH_TUI_TEST_SSHD names one: a test machine with openssh-server is left alone)."""
    if not os.environ.get("DFLASH_TUI_TEST_SSHD"):
        return
    add_privsep_user(Path("/etc/passwd"))
    shadow = Path("/etc/shadow")
    if shadow.exists():
        unlock_root(shadow)


def _write_key(path: Path, key: asyncssh.SSHKey) -> None:
    key.write_private_key(str(path))
    key.write_public_key(str(path) + ".pub")
    os.chmod(path, 0o600)


def _children(pid: int) -> list[int]:
    """Descendants of ``pid`` (read from /proc), deepest last."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _is_sshd(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip().startswith("sshd")
    except OSError:
        return False


@dataclass
class LoopbackSshd:
    """One sshd instance in ``root`` on a free port; ``start`` it, ``stop`` it, start it again."""

    root: Path
    path_prefix: str = ""  # prepended to PATH in sessions (e.g. the fake nvidia-smi's folder)
    session_env: dict[str, str] = field(default_factory=dict)  # more variables for sessions
    # More sshd_config lines, e.g. "MaxStartups 256" where one sshd stands for many hosts
    # (OpenSSH's default, 10:30:100, drops unauthenticated connections beyond 10 at random).
    extra_config: str = ""
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.host_key = self.root / "host_ed25519"
        self.user_key = self.root / "id_ed25519"
        self.sshd_config = self.root / "sshd_config"
        self.ssh_config = self.root / "ssh_config"
        self.known_hosts = self.root / "known_hosts"
        self.empty_known_hosts = self.root / "known_hosts.empty"
        self.log = self.root / "sshd.log"
        if not self.host_key.exists():
            _write_key(self.host_key, asyncssh.generate_private_key("ssh-ed25519"))
            _write_key(self.user_key, asyncssh.generate_private_key("ssh-ed25519"))
        (self.root / "authorized_keys").write_bytes(Path(f"{self.user_key}.pub").read_bytes())
        self._write_configs()

    @property
    def host_public_line(self) -> str:
        key = Path(f"{self.host_key}.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {key[0]} {key[1]}\n"

    def _write_configs(self) -> None:
        path = "".join(f"{p}:" for p in (self.path_prefix, SESSION_PATH) if p)
        env = {"PATH": f"{path}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        env.update(self.session_env)
        setenv = " ".join(f'"{k}={v}"' for k, v in env.items())
        self.sshd_config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"PidFile {self.root}/sshd.pid\nAuthorizedKeysFile {self.root}/authorized_keys\n"
            "UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin yes\nStrictModes no\n"
            "AllowTcpForwarding yes\nMaxSessions 10\nLogLevel INFO\nUseDNS no\n"
            f"AllowUsers root\nSetEnv {setenv}\n{self.extra_config}"
        )
        common = (
            f"  HostName 127.0.0.1\n  Port {self.port}\n  User root\n"
            f"  IdentityFile {self.user_key}\n  IdentitiesOnly yes\n  BatchMode yes\n"
        )
        self.ssh_config.write_text(
            f"Host {ALIAS} {ALIAS}-b\n{common}  UserKnownHostsFile {self.known_hosts}\n"
            f"Host {ALIAS}-jump\n{common}  UserKnownHostsFile {self.known_hosts}\n"
            f"  ProxyJump {ALIAS}\n"
            f"Host {ALIAS}-unknown\n{common}  UserKnownHostsFile {self.empty_known_hosts}\n"
        )
        self.known_hosts.write_text(self.host_public_line)
        self.empty_known_hosts.write_text("")

    def start(self, timeout: float = 10.0) -> None:
        prepare_bare_host()
        os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        env = dict(os.environ, LD_LIBRARY_PATH=SSHD_LIBS) if SSHD_LIBS else None
        check = subprocess.run(
            [SSHD, "-t", "-f", str(self.sshd_config)], capture_output=True, env=env
        )
        if check.returncode:
            raise RuntimeError(f"sshd -t refused the test config: {check.stderr.decode()}")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.sshd_config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited at once: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on {self.port}: {self.log.read_text()[-2000:]}")

    def login(self) -> AbstractAsyncContextManager[asyncssh.SSHClientConnection]:
        """A root login to this sshd with its own user key and known_hosts, straight to the
        port (no ssh config): ``async with server.login() as conn``."""
        return asyncssh.connect(
            "127.0.0.1",
            self.port,
            username="root",
            client_keys=[str(self.user_key)],
            known_hosts=str(self.known_hosts),
        )

    def sessions(self) -> list[int]:
        """The sshd processes serving connections (children of the listener)."""
        return [p for p in _children(self.proc.pid) if _is_sshd(p)] if self.proc else []

    def signal_sessions(self, sig: int) -> None:
        """E.g. SIGSTOP: the link goes silent without closing (a frozen host or network)."""
        for pid in self.sessions():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """End the listener and its session processes (what a client sees as sshd gone).

        Only sshd processes are signalled: a job started through a session (in its own
        session, output redirected) keeps running, as it does when a real link drops.
        """
        if self.proc is None:
            return
        for pid in [self.proc.pid, *self.sessions()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        self.proc = None

    @property
    def env(self) -> dict[str, str]:
        """Environment that points dflash-tui's SSH transport at this server."""
        return {"DFLASH_TUI_SSH_CONFIG": str(self.ssh_config)}
