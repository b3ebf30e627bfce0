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
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("tui", "dflash")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert found | {"tui.themes"} == set(cfg["packages"])
    assert cfg["package-dir"]["tui.themes"] == "themes"
    assert list((ROOT / "themes").glob("*.toml")), "themes/ holds the theme files"
    assert "*.sh" in cfg["package-data"]["tui.core"]


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
        "tui/themes/dflash-dark.toml",
        "tui/themes/dflash-light.toml",
        "tui/themes/dflash-contrast.toml",
        "tui/core/control.sh",
        "tui/core/probe.py",
        "tui/app/app.tcss",
        "dflash/train.py",
    ):
        assert want in names, want
