"""The layering is a checked contract: import-linter's contracts (pyproject.toml) hold, and
break when a layer reaches where it must not (each planted once, in a copy of the tree).
Also: no two modules of the supervisor define a public class or function of the same name."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None
    if pythonpath is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_every_contract_is_kept() -> None:
    res = lint_imports(ROOT)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    kept = [ln for ln in res.stdout.splitlines() if ln.rstrip().endswith("KEPT")]
    assert len(kept) >= 4 and "0 broken" in res.stdout


def planted_tree(tmp_path: Path) -> Path:
    """A copy of the sources whose import names resolve to the copy (PYTHONPATH wins over the
    editable install's finder, which comes after the path finder)."""
    for folder in ("tui", "dflash"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "dflash_tui").symlink_to(tmp_path / "tui")
    (src / "dflash_train").symlink_to(tmp_path / "dflash")
    return src


@pytest.mark.parametrize(
    ("target", "line", "says"),
    [
        (
            "tui/core/probe/gpu.py",
            "import asyncssh",
            "dflash_tui.core.probe is not allowed to import asyncssh",
        ),
        (
            "tui/core/diagnosis/diagnose.py",
            "from dflash_tui.core.link import transport",
            "dflash_tui.core.diagnosis is not allowed to import dflash_tui.core.link",
        ),
        (
            "tui/core/link/feed.py",
            "from dflash_tui.core.control import script",
            "dflash_tui.core.link is not allowed to import dflash_tui.core.control",
        ),
        (
            "tui/core/diagnosis/tracker.py",
            "import textual",
            "dflash_tui.core is not allowed to import textual",
        ),
        (
            "tui/core/record/replay.py",
            "from dflash_tui.core.link import transport",
            "dflash_tui.core.record is not allowed to import dflash_tui.core.link",
        ),
        (
            "tui/core/diagnosis/tracker.py",
            "from dflash_tui.core.record import codec",
            "dflash_tui.core.diagnosis is not allowed to import dflash_tui.core.record",
        ),
        (
            "tui/app/host/pane.py",
            "from dflash_tui.app.control import actions",
            "dflash_tui.app.host is not allowed to import dflash_tui.app.control",
        ),
        (
            "tui/app/widgets/palette.py",
            "from dflash_tui.app.keys import table",
            "dflash_tui.app.widgets is not allowed to import dflash_tui.app.keys",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, target: str, line: str, says: str
) -> None:
    src = planted_tree(tmp_path)
    clean = lint_imports(tmp_path, src)
    assert clean.returncode == 0, "the copy is clean before planting: " + clean.stdout[-2000:]
    path = tmp_path / target
    path.write_text(path.read_text() + f"\n{line}  # planted\n")
    res = lint_imports(tmp_path, src)
    assert res.returncode != 0 and "1 broken" in res.stdout
    assert says in res.stdout, res.stdout[-3000:]


def public_definitions(root: Path) -> dict[str, list[str]]:
    """Top-level public classes and functions of every module under ``root``."""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, kinds) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(root)))
    return where


def clashes(root: Path) -> dict[str, list[str]]:
    return {k: v for k, v in public_definitions(root).items() if len(v) > 1}


def test_no_two_modules_define_the_same_public_name() -> None:
    assert clashes(ROOT / "tui") == {}


def test_the_name_check_sees_a_clash(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Progress: ...\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("async def Progress(): ...\n\ndef _private(): ...\n")
    assert clashes(tmp_path) == {"Progress": ["a.py", "sub/b.py"]}


def test_the_supervisor_contract_names_every_pipeline_module_but_topology() -> None:
    # A module added to the pipeline later is not forbidden to the supervisor unless listed.
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [
        c
        for c in data["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("The supervisor uses only the pipeline's light topology")
    ]
    modules = {f"dflash_train.{p.stem}" for p in (ROOT / "dflash").glob("*.py")}
    assert modules - set(contract["forbidden_modules"]) == {
        "dflash_train.__init__",
        "dflash_train.topology",
    }


# What `status --json` on this machine must not import: the app's toolkit, the table's Rich,
# SSH (no --host), the metrics and pipeline extras, and the supervisor's own machinery; nor
# asyncio and the transports: the probe runs in this process (core/link/local_probe.py).
STATUS_FORBIDDEN = (
    "textual",
    "rich",
    "asyncssh",
    "asyncio",
    "dflash_tui.core.link.transport",
    "dflash_tui.core.link.feed",
    "torch",
    "prometheus_client",
    "dflash_tui.app",
    "dflash_tui.cli.supervise",
    "dflash_tui.core.control.supervisor",
    "importlib.metadata",
)
AFTER_MAIN = (
    "import sys\n"
    "from dflash_tui.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    "sys.exit(rc)\n"
)


def test_status_json_imports_only_what_it_needs(tmp_path: Path) -> None:
    import json
    import os

    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-c", AFTER_MAIN, "status", "--json", f"--run-root={tmp_path}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(res.stdout)["schema"] == 1, res.stderr[-2000:]  # it did the work
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("MODULES ")]
    modules = line.split()[1:]
    assert "dflash_tui.core.diagnosis.tracker" in modules  # the list is the real one
    assert "dflash_tui.core.probe.main" in modules  # the sample was taken here
    loaded = [m for m in modules if any(m == f or m.startswith(f + ".") for f in STATUS_FORBIDDEN)]
    assert loaded == []


def test_the_app_and_the_supervisor_start_without_the_slurm_modules() -> None:
    """A direct host (most of them) never needs Slurm: its modules load with a Slurm host."""
    code = (
        "import sys\n"
        "import dflash_tui.app.app, dflash_tui.core.control.supervisor\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    modules = res.stdout.split()
    assert "dflash_tui.core.control.scheduled" in modules  # the list is the real one
    slurm = "dflash_tui.core.control.slurm"
    assert [m for m in modules if m == slurm or m.startswith(slurm + ".")] == []
