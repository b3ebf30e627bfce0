"""How long create_block_mask takes to compile, and then to run, at one DFlash shape.

The medium preset (seq 2048, 512 anchors, block 16: Q 8192 x KV 10240) hung at "compiling
create_block_mask" under torch's default Inductor options: the fused argsort kernel unrolled
to ~110k lines of PTX and ptxas ran for minutes. The pipeline compiles it without persistent
reductions (dflash/mask.py COMPILE_OPTIONS), so Inductor calls aten's sort there instead.

Variants (run each in a fresh process with its own TORCHINDUCTOR_CACHE_DIR, under `timeout`,
since a compile cannot be interrupted from inside):
  pipeline   torch.compile with the pipeline's options (what dflash-train runs)
  default    torch.compile with torch's default options
  eager      create_block_mask without torch.compile

Prints one JSON line: variant, compile_s (first call), median_ms of later calls, peak_mib.
Usage (repo root): python bench/block_mask_compile.py --variant pipeline --seq 2048
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout

import torch
from torch.nn.attention.flex_attention import create_block_mask

from dflash_train.mask import COMPILE_OPTIONS, mask_mod_for


def _maker(variant: str) -> Callable[..., Any]:
    if variant == "eager":
        return create_block_mask
    options = COMPILE_OPTIONS["create_block_mask"] if variant == "pipeline" else None
    return torch.compile(create_block_mask, dynamic=False, options=options)


def _anchors(a: argparse.Namespace, dev: torch.device, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    pick = torch.randperm(a.seq - a.block, generator=gen)[: a.anchors]
    return pick.sort().values.repeat(a.batch, 1).to(dev)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", choices=("pipeline", "default", "eager"), default="pipeline")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--anchors", type=int, default=512)
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--runs", type=int, default=20)
    a = p.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    make = _maker(a.variant)

    def build(seed: int) -> float:
        anchors = _anchors(a, dev, seed)
        keep = torch.rand(anchors.shape, device=dev) > 0.1
        mod = mask_mod_for(anchors, keep, a.seq, a.block)
        t0 = time.perf_counter()
        make(mod, a.batch, None, a.anchors * a.block, a.seq + a.anchors * a.block, device=dev)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - t0

    print(f"{a.variant}: compiling at seq {a.seq}", file=sys.stderr, flush=True)
    first = build(0)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times = [build(i + 1) for i in range(a.runs)]
    peak = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else 0.0
    row = {
        "variant": a.variant,
        "torch": torch.__version__,
        "device": str(dev),
        "q_len": a.anchors * a.block,
        "kv_len": a.seq + a.anchors * a.block,
        "compile_s": round(first, 2),
        "median_ms": round(statistics.median(times) * 1e3, 3),
        "peak_mib": round(peak, 1),
    }
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
