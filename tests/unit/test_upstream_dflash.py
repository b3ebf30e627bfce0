"""PyPI's ``dflash`` (upstream DFlash, z-lab) and ours live in one environment: the test extra
installs the upstream wheel beside dflash-tui, and both import and run from a neutral folder
(the repo's own ``dflash/`` folder would shadow upstream when the repo root is on sys.path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_both_packages_import_side_by_side(tmp_path: Path) -> None:
    code = (
        "import dflash, dflash_tui, dflash_train, dflash_train.topology\n"
        "from dflash_tui.core.diagnosis import diagnose\n"
        "print(dflash.__file__)\n"
        "print(sorted(dflash.__all__))\n"
        "print(dflash_train.__file__)\n"
    )
    res = run([sys.executable, "-c", code], tmp_path)
    assert res.returncode == 0, res.stderr
    upstream, names, ours = res.stdout.splitlines()
    assert "site-packages" in upstream, "dflash is upstream's, installed"
    assert "DFlashDraftModel" in names
    assert Path(ours).parent.name == "dflash", "dflash_train is our dflash/ folder"


def test_all_three_commands_run(tmp_path: Path) -> None:
    for cmd in (["dflash", "--help"], ["dflash-tui", "--help"], ["dflash-train", "--help"]):
        res = run([str(BIN / cmd[0]), *cmd[1:]], tmp_path)
        assert res.returncode == 0, (cmd, res.stderr[-2000:])
        assert "usage:" in res.stdout, cmd
    up = run([str(BIN / "dflash"), "--help"], tmp_path).stdout
    assert "generate" in up and "benchmark" in up, "upstream's own command line"
