"""``dflash-train export CHECKPOINT OUT_DIR`` and the dispatch of ``dflash-train regen``.

Both check their input before torch is imported (one line, exit 2), like training does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dflash_train.drafter_dir import check_empty_out
from dflash_train.usage import UsageError

SUBCOMMANDS = ("export", "regen")


def export_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="dflash-train export",
        description="Write a training checkpoint as a Hugging Face DFlash drafter directory "
        "(z-lab DFlashDraftModel, SGLang, vLLM).",
    )
    p.add_argument("checkpoint", type=Path, help="a step_N.pt of a run's checkpoints/")
    p.add_argument("out_dir", type=Path, help="a new or empty directory")
    ns = p.parse_args(argv)
    try:
        if not ns.checkpoint.is_file():
            raise UsageError(f"checkpoint {ns.checkpoint}: no such file (a step_N.pt)")
        check_empty_out(ns.out_dir, "OUT_DIR")
    except UsageError as exc:
        print(f"dflash-train export: error: {exc}", file=sys.stderr)
        return 2
    from dflash_train.export import export_checkpoint

    try:
        out = export_checkpoint(ns.checkpoint, ns.out_dir)
    except (ValueError, KeyError) as exc:
        print(f"dflash-train export: error: {exc}", file=sys.stderr)
        return 2
    print(f"dflash-train export: {ns.checkpoint} -> {out}")
    return 0


def main(argv: list[str]) -> int:
    if argv[0] == "export":
        return export_main(argv[1:])
    from dflash_train.regen import main as regen_main

    return regen_main(argv[1:])
