"""A virtual environment like a pipx install of dflash-tui without the ``pipeline`` extra: the
supervisor's dependencies and this checkout (its editable finder), but no torch and no
transformers. The dependencies are linked from the test interpreter's own site-packages, all
but the pipeline's, so nothing is downloaded and the interpreter really cannot import torch."""

from __future__ import annotations

import shutil
import sysconfig
import venv
from pathlib import Path

PIPELINE = ("torch", "torchgen", "transformers", "functorch")


def _deps_dir() -> Path:
    import torch

    return Path(torch.__file__).resolve().parents[1]


def _hidden(name: str) -> bool:
    stem = name.split("-")[0].split(".")[0].lower()
    return stem in PIPELINE or name.endswith(".pth") or name.startswith("__editable__")


def make_light_venv(where: Path) -> Path:
    """The venv's python; ``where``/bin/dflash-train is its script, as pip would write it."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    site = Path(sysconfig.get_paths(vars={"base": str(where), "platbase": str(where)})["purelib"])
    light = where / "light"
    light.mkdir()
    for entry in _deps_dir().iterdir():
        if not _hidden(entry.name):
            (light / entry.name).symlink_to(entry)
    (site / "light.pth").write_text(f"{light}\n")
    ours = Path(sysconfig.get_paths()["purelib"])
    finders = sorted(ours.glob("__editable__*dflash_tui*"))
    assert finders, f"this checkout is not installed editable in {ours} (tasks.py does so)"
    for f in finders:
        shutil.copy(f, site / f.name)
    script = where / "bin" / "dflash-train"
    script.write_text(
        f"#!{python}\nimport sys\nfrom dflash_train.train import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return python
