"""A launch of the bundled pipeline where its interpreter lacks torch (a pipx install without
the pipeline extra) fails before any run directory is made and says what to install; other
commands, and an interpreter that has torch, are not held up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from light_venv import make_light_venv

from dflash_tui.core.control.preflight import INSTALL, pipeline_interpreter


@pytest.fixture(scope="module")
def light_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield make_light_venv(tmp_path_factory.mktemp("pipx") / "venv")


def run(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_light_venv_is_what_pipx_would_make(light_python: Path) -> None:
    probe = "import importlib.util as u; print(u.find_spec('torch'), u.find_spec('textual'))"
    res = subprocess.run([str(light_python), "-c", probe], capture_output=True, text=True)
    assert res.stdout.split()[0] == "None" and "textual" in res.stdout, res.stderr


def test_default_launch_fails_before_a_run_directory_and_names_the_extra(
    light_python: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    res = run(light_python, "launch", "--json", "--run-root", str(root))  # the default command
    assert res.returncode == 1, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["ok"] is False and INSTALL in out["error"]
    assert f"the interpreter {light_python} cannot import torch" in out["error"]
    assert not root.exists(), "no run directory, no run root made"


def test_the_dflash_train_script_is_checked_through_its_first_line(
    light_python: Path, tmp_path: Path
) -> None:
    script = light_python.parent / "dflash-train"
    root = tmp_path / "runs"
    res = run(
        sys.executable, "launch", "--run-root", str(root), "--command", f"{script} --preset tiny"
    )
    assert res.returncode == 1 and INSTALL in res.stdout, res.stdout + res.stderr
    assert f"the dflash-train script {script} cannot import torch" in res.stdout
    assert not root.exists()


def test_an_interpreter_with_torch_and_other_commands_launch(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    ok = run(sys.executable, "launch", "--json", "--run-root", str(root),
             "--command", f"{sys.executable} -m dflash_train.train --help")  # fmt: skip
    assert json.loads(ok.stdout)["error"] is None, ok.stdout
    assert len(list(root.iterdir())) == 1


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("python3 -m dflash_train.train --preset tiny", ("python3", False)),
        ("env A=1 /v/bin/python3.11 -m dflash_train --steps 3", ("/v/bin/python3.11", False)),
        ("X=1 dflash-train --preset tiny", ("dflash-train", True)),
        ("/opt/v/bin/dflash-train", ("/opt/v/bin/dflash-train", True)),
        ("python3 train.py", None),
        ("torchrun --nproc-per-node 2 -m dflash_train.train", None),
        ("sleep 60", None),
        ("python3 -m 'unclosed", None),
    ],
)
def test_which_commands_are_the_bundled_pipeline(
    command: str, found: tuple[str, bool] | None
) -> None:
    assert pipeline_interpreter(command) == found
