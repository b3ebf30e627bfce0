"""mypy over the supervisor and the pipeline reports no error (config: pyproject.toml).

mypy cannot follow setuptools' editable finder, and the import names are not the folder names
(docs/internals.md, "Import names"), so the folders are linked under their import names first."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def link_import_names() -> None:
    """tasks.py's own linking, loaded by path (ROOT on sys.path would shadow PyPI's dflash)."""
    spec = importlib.util.spec_from_file_location("dflash_tasks", ROOT / "tasks.py")
    assert spec is not None and spec.loader is not None
    tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tasks)
    tasks.link_import_names()


def test_mypy_is_clean() -> None:
    link_import_names()
    mypy = Path(sys.executable).with_name("mypy")
    res = subprocess.run([str(mypy)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert "Success: no issues found" in res.stdout
