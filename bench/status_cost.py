#!/usr/bin/env python3
"""Wall time of ``dflash-tui status --json`` on this machine: this checkout beside another
revision's (``--old REV``), in one run.

That revision's ``tui`` and ``dflash`` folders are taken with ``git archive`` into a
temporary folder; each tree is run by this venv's python with PYTHONPATH pointing at a folder
of links under the import names (as tasks.py's link_import_names does), which wins over the
editable install. The runs alternate between the two trees, the order reversed every other
run, so that the machine's load falls on both alike. Both use the stand-in nvidia-smi of
tests/fakes (8 GPUs) unless --no-fake-smi, an empty config folder, an empty run root and a
byte-code cache that the first run of each fills. Prints medians per tree and their ratio.

    .venv/bin/python bench/status_cost.py [--runs 10] --old REV [--no-fake-smi]

Where there is no git history (the device machine), ``--old-dir DIR`` names that revision's
exported tree (``git archive REV tui dflash | tar -x -C DIR``). An inherited
PYTHONPATH (the device's /tmp/site with nvidia-ml-py) stays behind the trees' links.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from fakes.scenario import FAKES, SCENARIOS  # noqa: E402
from monitor_cost import in_turn, link_farm  # noqa: E402

FOLDERS = ("tui", "dflash")  # the source folders behind the import names
ENTRY = "import sys; from dflash_tui.cli.main import main; sys.exit(main())"


def export(commit: str, into: Path) -> Path:
    """``commit``'s source folders (git archive), no worktree left behind."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, *FOLDERS],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir()
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        tf.extractall(into, filter="data")
    return into


def one_run(path: Path, env: dict[str, str], run_root: str) -> float:
    """Seconds for one ``status --json``; the document must come back."""
    args = [sys.executable, "-c", ENTRY, "status", "--json", f"--run-root={run_root}"]
    t0 = time.perf_counter()
    inherited = env.get("PYTHONPATH")
    pythonpath = f"{path}{os.pathsep}{inherited}" if inherited else str(path)
    res = subprocess.run(args, env={**env, "PYTHONPATH": pythonpath}, capture_output=True)
    took = time.perf_counter() - t0
    if b'"schema": 1' not in res.stdout:
        raise SystemExit(f"status printed no document ({path}): {res.stderr[-400:]!r}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--old", help="the revision to compare with (its name in the table)")
    ap.add_argument("--old-dir", type=Path, help="that revision's tree, already exported")
    ap.add_argument("--no-fake-smi", action="store_true", help="no stand-in nvidia-smi on PATH")
    args = ap.parse_args()
    if args.old is None and args.old_dir is None:
        ap.error("name the tree to compare with: --old REV or --old-dir DIR")
    old = args.old or str(args.old_dir)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "config").mkdir()
        (t / "runs").mkdir()
        # Byte code cached as an installed package has it (this VM sets PYTHONDONTWRITEBYTECODE,
        # which would compile every module of ours on every run).
        env = dict(
            os.environ, XDG_CONFIG_HOME=str(t / "config"), PYTHONPYCACHEPREFIX=str(t / "pyc")
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if not args.no_fake_smi:
            env["PATH"] = f"{FAKES}{os.pathsep}{env['PATH']}"
            env["FAKE_SMI_SCENARIO"] = str(SCENARIOS / "seed-incident.json")
        trees = {
            old: link_farm(args.old_dir or export(args.old, t / "old"), t / "old-path"),
            "this checkout": link_farm(ROOT, t / "new-path"),
        }
        took: dict[str, list[float]] = {k: [] for k in trees}
        for path in trees.values():  # warm the disk cache and the .pyc files
            one_run(path, env, str(t / "runs"))
        for rep in range(args.runs):
            for label, path in in_turn(list(trees.items()), rep):
                took[label].append(one_run(path, env, str(t / "runs")))
    smi = "none" if args.no_fake_smi else "stand-in nvidia-smi (8 GPUs)"
    print(f"`dflash-tui status --json`, local, {args.runs} runs each, alternating; {smi}")
    print("| tree | wall s (median) | min | max |")
    print("| --- | --- | --- | --- |")
    for label, xs in took.items():
        print(f"| {label} | {statistics.median(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} |")
    old_s, new = (statistics.median(xs) for xs in took.values())
    print(f"ratio (this / {old}): {new / old_s:.2f}")


if __name__ == "__main__":
    main()
