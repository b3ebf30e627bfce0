"""docs/reference and the man page are generated from their one source each
(tools/gen_reference.py): regenerating gives the committed files, a schema changed without its
document fails, the config's meanings cover exactly its tables and keys, and the man page
renders with man(1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dflash_tui.core.base.config_docs import KEYS, TABLES
from dflash_tui.core.base.config_job import JOB_KEYS
from dflash_tui.core.base.config_keys import TOP

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "tools" / "gen_reference.py"
MAN = ROOT / "tui" / "cli" / "dflash-tui.1"


def gen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN), *args], capture_output=True, text=True, timeout=120
    )


def test_regenerating_gives_the_committed_files() -> None:
    res = gen("--check")
    assert res.returncode == 0, res.stderr


def test_a_schema_changed_without_its_document_fails(tmp_path: Path) -> None:
    docs = tmp_path / "reference"
    shutil.copytree(ROOT / "docs" / "reference", docs)
    man = tmp_path / "dflash-tui.1"
    shutil.copy(MAN, man)
    assert gen("--check", "--docs", str(docs), "--man", str(man)).returncode == 0
    schema = docs / "status.schema.json"
    schema.write_text(schema.read_text().replace('"schema": {', '"schemas": {', 1))
    res = gen("--check", "--docs", str(docs), "--man", str(man))
    assert res.returncode == 1
    assert "status-json.md: stale" in res.stderr and "cli.md" not in res.stderr
    assert gen("--docs", str(docs), "--man", str(man)).returncode == 0  # written: fresh again
    assert '"schemas": {' in (docs / "status-json.md").read_text()


def test_every_table_and_key_has_a_meaning_and_no_meaning_is_stale() -> None:
    paths = set()
    for table, schema in TOP.items():
        if table == "hosts":
            continue  # documented with [host]: the same keys
        keys = JOB_KEYS if table == "jobs" else (schema if isinstance(schema, dict) else ())
        paths |= {f"{table}.{k}" for k in keys}
    assert set(TABLES) == set(TOP)
    assert set(KEYS) == paths


def test_the_man_page_renders() -> None:
    if shutil.which("man") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must render the man page: man-db is missing (.ci/run installs it)")
        pytest.skip("man is not installed")
    env = {**os.environ, "MANPAGER": "cat", "MANWIDTH": "100", "LANG": "C.UTF-8"}
    res = subprocess.run(["man", "-l", str(MAN)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert "dflash-tui - supervise a live multi-GPU DFlash drafter-training run" in text
    for sub in ("dflash-tui status", "dflash-tui launch", "dflash-tui completion"):
        assert sub in text
    assert "--fail-on" in text
