"""The core must stay usable from scripts: importing it never imports Textual, Rich or torch,
and the command line imports Textual only when the app starts (checked at run time, beside the
import contracts that check the source)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import dflash_tui.core

CHECK = (
    "import importlib, sys\n"
    "for m in {mods!r}: importlib.import_module(m)\n"
    "{extra}"
    "bad = sorted(k for k in sys.modules if k.split('.')[0] in {banned!r} "
    "or k.startswith('dflash_tui.app'))\n"
    "print(bad)\n"
    "sys.exit(1 if bad else 0)\n"
)


def core_modules() -> list[str]:
    """Every module of the core, sub-packages walked."""
    walk = pkgutil.walk_packages(dflash_tui.core.__path__, "dflash_tui.core.")
    return [m.name for m in walk]


def test_the_walk_reaches_every_layer() -> None:
    mods = core_modules()
    for layer in ("base", "probe", "link", "diagnosis", "control"):
        assert any(m.startswith(f"dflash_tui.core.{layer}.") for m in mods), layer
    assert "dflash_tui.core.diagnosis.diagnose" in mods


def test_core_never_imports_textual_rich_or_torch() -> None:
    code = CHECK.format(mods=core_modules(), extra="", banned=("textual", "rich", "torch"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_command_line_imports_no_textual_until_the_app_starts() -> None:
    code = CHECK.format(mods=["dflash_tui.cli.main"], extra="", banned=("textual", "torch"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_pipeline_package_is_light() -> None:
    code = "import dflash_train, dflash_train.topology, sys; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
