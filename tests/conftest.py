"""Shared fixtures. ``fake_smi``: the stand-in nvidia-smi (tests/fakes/) first on PATH;
``tmux``: a private tmux server (tests/tmux_util.py); ``slurm``: a local Slurm cluster
(tests/slurm_cluster.py), one for the session."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `from fakes.scenario import ...` in any test
    sys.path.insert(0, str(TESTS))

from fakes.scenario import ENV_VARS, FAKES, NVML_FAKE_DIR, FakeSmi  # noqa: E402
from slurm_cluster import Cluster, slurm_unavailable  # noqa: E402
from tmux_util import Tmux  # noqa: E402


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server; fails under CI when tmux is missing, skips elsewhere."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the tmux tests: install tmux", pytrace=False)
        pytest.skip("tmux is not installed")
    t = Tmux(tmp_path)
    yield t
    t.kill()


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSmi]:
    """tests/fakes/nvidia-smi first on PATH, playing the seed incident until told otherwise.

    The fake ``pynvml`` goes first on PYTHONPATH too (its nvmlInit fails unless
    ``fake_smi.nvml()`` is called), so a probe run by the test reads the fake even on a
    machine with real GPUs and nvidia-ml-py installed; and first on this process's sys.path,
    for a probe inside this process (the app's and ``status``'s on this machine). Use
    ``fake_smi.use(name | path | dict)``, ``.write(gpus, apps)``, ``.hang()``, ``.raw(bytes)``;
    see tests/fakes/scenario.py.
    """
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ.get('PATH', '')}")
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv(
        "PYTHONPATH",
        f"{NVML_FAKE_DIR}{os.pathsep}{pythonpath}" if pythonpath else str(NVML_FAKE_DIR),
    )
    monkeypatch.syspath_prepend(str(NVML_FAKE_DIR))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    fake = FakeSmi(tmp_path, monkeypatch)
    fake.use("seed-incident")
    yield fake
    sys.modules.pop("pynvml", None)  # the fake: later tests import whichever comes first again


@pytest.fixture(autouse=True)
def _no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test (nor a dflash-tui it starts) reads this user's own ~/.config/dflash-tui: the
    default config file and user themes come from an empty folder unless a test says so."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-xdg-config"))


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A real Slurm cluster on this machine (tests/slurm_cluster.py): munged, slurmctld and two
    slurmds (n1, n2, 8 gpu GRES each), started once; fails under CI when Slurm is missing."""
    why = slurm_unavailable()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Slurm tests: {why}", pytrace=False)
        pytest.skip(why)
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    cluster.started_in = cluster.start()
    yield cluster
    cluster.stop()
