"""``status --json`` and ``status --watch`` over several SSH hosts: every host contacted at
once, and a host that never answers reported as unreachable within its own timeout.

The hosts are labelled entries of one loopback sshd whose sessions' GPU tool (the fake
nvidia-smi) answers DELAY seconds late, and the probe asks it twice: a host SLOW seconds slow.
One after another, N of them take N * SLOW more than one host does; concurrently, about as
long as one. A host that accepts TCP but never speaks SSH
(a listening socket nobody serves) is the unreachable one.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, cli, local_view, make_sshd
from loopback_sshd import ALIAS, LoopbackSshd

pytestmark = pytest.mark.ssh

DELAY = 1.0  # seconds each call of the hosts' GPU tool waits
SLOW = 2 * DELAY  # what that adds to one sample (two calls)
HOSTS = 6
SILENT = "dflash-silent"  # the ssh alias of a host that never answers
SILENT_TIMEOUT = 3  # its ConnectTimeout (ssh config), seconds


@pytest.fixture(scope="module")
def slow_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    server = make_sshd(tmp_path_factory.mktemp("slow-sshd"))
    server.session_env["FAKE_SMI_DELAY"] = str(DELAY)
    server = LoopbackSshd(server.root, server.path_prefix, server.session_env)  # configs again
    server.start()
    yield server
    server.stop()


@pytest.fixture
def silent_host(slow_sshd: LoopbackSshd, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An ssh alias whose TCP connection is accepted (by the backlog) and never answered."""
    local_view(slow_sshd, monkeypatch)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        extra = slow_sshd.root / "ssh_config.silent"
        extra.write_text(
            f"Host {SILENT}\n  HostName 127.0.0.1\n  Port {listener.getsockname()[1]}\n"
            f"  User root\n  ConnectTimeout {SILENT_TIMEOUT}\n  BatchMode yes\n"
        )
        monkeypatch.setenv("DFLASH_TUI_SSH_CONFIG", f"{slow_sshd.ssh_config}{os.pathsep}{extra}")
        yield SILENT


def hosts_config(path: Path, addresses: list[str]) -> Path:
    lines = []
    for i, address in enumerate(addresses):
        lines += ["[[hosts]]", f'label = "h{i}"', f'address = "{address}"', "[hosts.run]"]
        lines += [f'run_root = "{path.parent / f"runs-{i}"}"', ""]
    path.write_text("\n".join(lines))
    return path


def timed_status(cfg: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    res = cli("status", "--json", "--config", str(cfg))
    return time.monotonic() - t0, res


def one_host_s(tmp_path: Path) -> float:
    """Seconds of ``status --json`` for one slow host (the start, imports and SLOW in)."""
    took, res = timed_status(hosts_config(tmp_path / "one.toml", [ALIAS]))
    assert "error" not in json.loads(res.stdout), res.stdout
    assert took >= SLOW  # the slow GPU tool was in the way
    return took


def test_hosts_are_sampled_concurrently(silent_host: str, tmp_path: Path) -> None:
    one = one_host_s(tmp_path)
    took, res = timed_status(hosts_config(tmp_path / "hosts.toml", [ALIAS] * HOSTS))
    docs = json.loads(res.stdout)
    assert [d["host"] for d in docs] == [f"h{i}" for i in range(HOSTS)], res.stderr
    assert all("error" not in d and d["gpus"] for d in docs), docs
    # One after another would add (HOSTS - 1) * SLOW to one host's time.
    assert took - one < (HOSTS - 1) * SLOW * 0.5, f"{took:.1f} s against {one:.1f} s for one"


def test_an_unreachable_host_costs_only_its_own_timeout(silent_host: str, tmp_path: Path) -> None:
    one = one_host_s(tmp_path)
    cfg = hosts_config(tmp_path / "hosts.toml", [ALIAS, silent_host, ALIAS, ALIAS])
    took, res = timed_status(cfg)
    docs = json.loads(res.stdout)
    assert [d["host"] for d in docs] == ["h0", "h1", "h2", "h3"], res.stderr
    for i in (0, 2, 3):
        assert "error" not in docs[i] and docs[i]["gpus"], docs[i]
    silent = docs[1]
    assert silent["findings"][0]["code"] == "host-unreachable"
    assert "no answer within the connect timeout" in silent["error"]
    assert res.returncode == 1
    # Its ConnectTimeout beside the others' samples: not the sample's 30 s, and not added to
    # the three slow hosts' time (one after another: SILENT_TIMEOUT + 2 * SLOW more than one).
    assert took - one < SILENT_TIMEOUT + SLOW * 0.5, f"{took:.1f} s against {one:.1f} s for one"


def read_until(proc: subprocess.Popen[str], done: set[str], deadline: float) -> dict[str, float]:
    """When each label in ``done`` first printed its run line (monotonic), up to ``deadline``."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen: dict[str, float] = {}
    while set(seen) != done and time.monotonic() < deadline:
        if not sel.select(max(0.0, deadline - time.monotonic())):
            break
        line = proc.stdout.readline()
        if not line:
            break
        words = line.split()  # STAMP LABEL run STATE | STAMP LABEL unreachable: ...
        if len(words) >= 3 and words[1] in done and words[2] in ("run", "unreachable:"):
            seen.setdefault(words[1], time.monotonic())
    return seen


def test_watch_opens_every_host_at_once(silent_host: str, tmp_path: Path) -> None:
    """The first line of every host, the silent one's "unreachable" included, comes within
    about one slow start, not one after another."""
    addresses = [ALIAS] * (HOSTS - 1) + [silent_host]
    cfg = hosts_config(tmp_path / "hosts.toml", addresses)
    labels = {f"h{i}" for i in range(HOSTS)}
    argv = [sys.executable, "-m", "dflash_tui.cli.main", "status", "--watch", "--config", str(cfg)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
    )
    try:
        seen = read_until(proc, labels, t0 + 60)
    finally:
        proc.terminate()
        proc.wait(10)
    assert set(seen) == labels, seen
    reachable = [seen[f"h{i}"] for i in range(HOSTS - 1)]
    # One after another, the last reachable host would speak (HOSTS - 2) * SLOW after the first,
    # and the silent one after all of them.
    spread = max(reachable) - min(reachable)
    assert spread < (HOSTS - 2) * SLOW * 0.5, f"{spread:.1f} s between the first and the last"
    silent = seen[f"h{HOSTS - 1}"] - min(reachable)
    assert silent < SILENT_TIMEOUT + SLOW, f"the silent host spoke {silent:.1f} s after the first"
