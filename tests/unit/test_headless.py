"""The core must stay usable from scripts: importing it never imports Textual."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import tui.core


def test_core_never_imports_textual() -> None:
    mods = [m.name for m in pkgutil.iter_modules(tui.core.__path__, "tui.core.")]
    assert "tui.core.diagnose" in mods
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "import tui.cli\n"
        "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'tui') and "
        "(k.startswith('textual') or k.startswith('tui.app')))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_pipeline_package_is_light() -> None:
    code = "import dflash, dflash.topology, sys; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
