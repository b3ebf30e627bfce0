"""Integration fixtures: a real OpenSSH sshd on 127.0.0.1 (tests/integration/loopback_sshd.py).

``sshd`` is one server for the whole session (fast); tests that stop the server make their own.
Sessions on it see the fake nvidia-smi first on PATH, playing ``sshd.scenario`` (a file the
tests rewrite); ``ssh_env`` gives this process the same view, so a local probe and a probe over
SSH read the same machine state. If /usr/sbin/sshd is missing the tests are skipped, except
under CI (env CI set), where that is a failure: .ci/run installs openssh-server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.scenario import ENV_VARS, FAKES, NVML_FAKE_DIR, box, write_scenario
from loopback_sshd import LoopbackSshd, sshd_unavailable
from slurm_cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]


def require_sshd() -> None:
    why = sshd_unavailable()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the loopback sshd tests: {why}", pytrace=False)
    pytest.skip(why)


def make_sshd(root: Path) -> LoopbackSshd:
    require_sshd()
    root.mkdir(parents=True, exist_ok=True)
    scenario = root / "scenario.json"
    write_scenario(scenario, box(2))
    (root / "bin").mkdir(exist_ok=True)  # tests may drop stand-ins (pct, docker) here
    return LoopbackSshd(
        root,
        path_prefix=f"{FAKES}{os.pathsep}{root / 'bin'}",
        session_env={"FAKE_SMI_SCENARIO": str(scenario), "PYTHONPATH": str(NVML_FAKE_DIR)},
    )


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


def local_view(server: LoopbackSshd, mp: pytest.MonkeyPatch) -> LoopbackSshd:
    """This process sees what the server's sessions see; the scenario is reset to 2 idle GPUs."""
    for var in ENV_VARS:
        mp.delenv(var, raising=False)
    scenario = server.root / "scenario.json"
    write_scenario(scenario, box(2))
    mp.setenv("PATH", f"{server.path_prefix}{os.pathsep}{os.environ.get('PATH', '')}")
    mp.setenv("PYTHONPATH", str(NVML_FAKE_DIR))
    mp.setenv("FAKE_SMI_SCENARIO", str(scenario))
    for k, v in server.env.items():
        mp.setenv(k, v)
    return server


@pytest.fixture
def ssh_env(sshd: LoopbackSshd, monkeypatch: pytest.MonkeyPatch) -> LoopbackSshd:
    return local_view(sshd, monkeypatch)


@pytest.fixture
def cluster(slurm: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """The session's Slurm cluster (tests/conftest.py ``slurm``), its commands reachable from
    this process; the test's jobs and node states are cleared after it."""
    for k, v in slurm.env.items():
        monkeypatch.setenv(k, v)
    yield slurm
    slurm.reset()


def cli(*args: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    """``dflash-tui ARGS`` in a subprocess (this process's environment)."""
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
