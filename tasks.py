#!/usr/bin/env python3
"""Set-up and entry points that need nothing but python3.

python3 tasks.py demo   # create .venv, install, start dflash-tui on this machine
python3 tasks.py test   # create .venv, install with test extras, run the tests
python3 tasks.py check  # ruff, mypy and the import contracts alone (the tests run them too)
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / "bin"
# The CPU build that lies on this kind of machine's disk; a bare "torch" would pull CUDA wheels.
TORCH = os.environ.get("DFLASH_TORCH", "torch==2.13.0")


def _pip(*args: str) -> None:
    subprocess.run([str(BIN / "python"), "-m", "pip", "install", "-q", *args], check=True)


def ensure_env(extras: str) -> None:
    stamp = VENV / f".installed-{extras}"
    pyproject = ROOT / "pyproject.toml"
    if stamp.exists() and stamp.stat().st_mtime >= pyproject.stat().st_mtime:
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"installing dflash-tui[{extras}] (first run only) ...", flush=True)
    _pip("--upgrade", "pip")
    if "pipeline" in extras:
        _pip(TORCH)
    _pip("-e", f"{ROOT}[{extras}]")
    stamp.touch()


def link_import_names() -> Path:
    """mypy cannot follow setuptools' editable finder, and the import names differ from the
    folder names: link them in .typecheck/ (pyproject.toml's mypy_path)."""
    farm = ROOT / ".typecheck"
    farm.mkdir(exist_ok=True)
    for name, folder in (("dflash_tui", "tui"), ("dflash_train", "dflash")):
        link = farm / name
        if not link.is_symlink() or os.readlink(link) != f"../{folder}":
            link.unlink(missing_ok=True)
            link.symlink_to(f"../{folder}")
    return farm


def check(env: dict[str, str]) -> int:
    link_import_names()
    steps = (["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"], ["lint-imports"])
    for step in steps:
        rc = subprocess.run([str(BIN / step[0]), *step[1:]], cwd=ROOT, env=env).returncode
        if rc:
            return rc
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "setup", "check"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    ensure_env("pipeline,nvml,test")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if cmd == "demo":
        os.execve(str(BIN / "dflash-tui"), ["dflash-tui", *rest], env)
    if cmd == "check":
        return check(env)
    if cmd == "test":
        return subprocess.run([str(BIN / "python"), "-m", "pytest", *rest], env=env).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
