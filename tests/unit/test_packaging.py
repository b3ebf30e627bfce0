"""What a built wheel carries: every package, the themes and the shell resources."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    names = {"tui": "dflash_tui", "dflash": "dflash_train"}  # folder -> import name
    found = {
        ".".join((names[top], *p.parent.relative_to(ROOT / top).parts))
        for top in names
        for p in (ROOT / top).rglob("__init__.py")
    }
    data = {"dflash_tui.themes", "dflash_tui.core.record.demo.seed"}  # folders of data files
    assert found | data == set(cfg["packages"])
    assert cfg["package-dir"] == {
        "dflash_tui": "tui",
        "dflash_tui.themes": "themes",
        "dflash_train": "dflash",
    }
    assert list((ROOT / "themes").glob("*.toml")), "themes/ holds the theme files"
    assert "*.sh" in cfg["package-data"]["dflash_tui.core.probe"]
    assert "*.sh" in cfg["package-data"]["dflash_tui.core.control"]


def test_built_wheel_carries_themes_and_scripts(tmp_path: Path) -> None:
    import subprocess
    import zipfile

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    (wheel,) = tmp_path.glob("dflash_tui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in (
        "dflash_tui/themes/dflash-dark.toml",
        "dflash_tui/themes/dflash-light.toml",
        "dflash_tui/themes/dflash-contrast.toml",
        "dflash_tui/core/control/control.sh",
        "dflash_tui/core/control/control_launch.sh",
        "dflash_tui/core/probe/shell.sh",
        "dflash_tui/core/probe/main.py",
        "dflash_tui/app/app.tcss",
        "dflash_tui/cli/config.example.toml",
        "dflash_tui/cli/dflash-tui.1",  # the man page (tools/gen_reference.py)
        "dflash_tui-0.1.0.data/data/share/man/man1/dflash-tui.1",  # ... where man(1) looks
        "dflash_tui/core/record/demo/seed/seg-001764669600000-0.jsonl.gz",
        "dflash_train/train.py",
    ):
        assert want in names, want
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n and ".data/" not in n}
    assert tops == {"dflash_tui", "dflash_train"}, "nothing else at the top: no tui, no dflash"
