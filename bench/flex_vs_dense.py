"""Compiled flex_attention versus the dense boolean mask for one DFlash drafter training step.

Measures, per attention mode, the median step time (forward + backward + AdamW) over several
runs, the peak GPU memory, and the drafter's throughput in context tokens per second. Same
drafter, same random features and anchors for every mode; drafter layers are not recomputed
unless --grad-checkpoint (the chunked loss is, as in the pipeline). Modes:
  flex        compiled flex_attention + compiled create_block_mask (the pipeline's GPU path)
  dense       SDPA with the dense boolean mask (the pipeline's CPU path)
  flex-eager  flex_attention without torch.compile: the silent fallback that ran the seed's
              run out of memory (only when asked for)

Usage (repo root): python bench/flex_vs_dense.py --seq 4096 --runs 10 --out bench.json
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a plain checkout

import torch

from dflash_train.loss import LossSpec, forward_loss
from dflash_train.mask import (
    FLEX_FALLBACK_WARNING,
    CompileFlags,
    flex_block_mask,
    forbid_flex_fallback,
)
from dflash_train.model import Drafter, DrafterConfig
from dflash_train.optim import make_optimizer
from dflash_train.pipeline import sync
from dflash_train.presets import gamma_for_block


def drafter_config(a: argparse.Namespace) -> DrafterConfig:
    return DrafterConfig(
        hidden_size=a.hidden,
        intermediate_size=a.hidden * 3,
        num_layers=a.layers,
        num_heads=a.heads,
        num_kv_heads=a.kv_heads,
        head_dim=a.head_dim,
        vocab_size=a.vocab,
        target_layer_ids=tuple(range(a.taps)),
        block_size=a.block,
        mask_token_id=min(151669, a.vocab - 1),
        rope_theta=1e6,
    )


def _mem(dev: torch.device, what: str) -> int:
    return getattr(torch.cuda, what)(dev) if dev.type == "cuda" else 0


def _block_mask_compiles(a: argparse.Namespace, dev: torch.device) -> bool:
    """The pipeline falls back to the eager create_block_mask if Inductor cannot build it."""
    anchors = torch.zeros(a.batch, a.anchors, dtype=torch.long, device=dev)
    try:
        flex_block_mask(anchors, anchors >= 0, a.seq, a.block, compiled=True)
        return True
    except Exception as exc:
        print(f"compiled create_block_mask failed, eager used: {exc!s:.200}", flush=True)
        return False


def run_mode(mode: str, a: argparse.Namespace, dev: torch.device) -> dict:
    cfg = drafter_config(a)
    torch.manual_seed(0)
    embed = torch.randn(a.vocab, a.hidden) * 0.02
    embed = embed.to(torch.bfloat16 if dev.type == "cuda" else torch.float32)
    model = Drafter(cfg, embed, embed).to(dev)
    model.grad_checkpoint = a.grad_checkpoint
    opt = make_optimizer(model.trainable(), 1e-4, 0.0)
    g = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, a.vocab - 1, (a.batch, a.seq), generator=g).to(dev)
    lm = torch.ones_like(ids)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    feats = torch.randn(a.batch, a.seq, a.taps * a.hidden, generator=g).to(dev, dtype)
    spec = LossSpec(
        a.block,
        a.anchors,
        gamma_for_block(a.block),
        cfg.mask_token_id,
        "dense" if mode == "dense" else "flex",
        a.chunk_blocks,
    )
    CompileFlags.flex = mode != "flex-eager"
    CompileFlags.block_mask = mode == "flex" and _block_mask_compiles(a, dev)

    def step() -> float:
        sync(dev)
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            loss, _ = forward_loss(model, ids, lm, feats, spec)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(dev)
        return time.perf_counter() - t0

    t_first = time.perf_counter()
    print(f"{mode}: model ready, first step (compiles)", flush=True)
    for i in range(a.warmup):
        took = step()
        print(f"{mode}: warm-up step {i + 1}: {took:.2f} s", flush=True)
    first_s = time.perf_counter() - t_first
    base = _mem(dev, "memory_allocated")  # weights, AdamW state, inputs: not the step's own
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    runs = a.runs if mode != "flex-eager" else max(1, min(a.runs, 3))
    times = [step() for _ in range(runs)]
    peak = _mem(dev, "max_memory_allocated")
    med = statistics.median(times)
    return {
        "mode": mode,
        "block_mask": "n/a"
        if mode == "dense"
        else ("compiled" if CompileFlags.block_mask else "eager"),
        "median_step_ms": round(med * 1e3, 2),
        "min_step_ms": round(min(times) * 1e3, 2),
        "runs": runs,
        "warmup_s": round(first_s, 1),
        "peak_mem_gib": round(peak / 2**30, 2),
        "step_mem_gib": round((peak - base) / 2**30, 2),
        "drafter_tok_s": round(a.batch * a.seq / med),
        "block_tok_s": round(a.batch * a.anchors * a.block / med),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--anchors", type=int, default=512)
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--taps", type=int, default=3)
    p.add_argument("--vocab", type=int, default=151936)
    p.add_argument("--chunk-blocks", type=int, default=128)
    p.add_argument(
        "--grad-checkpoint",
        action="store_true",
        help="recompute each drafter layer in backward (the pipeline's medium default)",
    )
    p.add_argument("--modes", default="flex,dense")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", type=Path)
    p.add_argument("--device", default="cuda:0", help="cpu: a smoke test of the dense mode")
    a = p.parse_args()
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID`: every thread's stack, e.g. a slow compile
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("flex_vs_dense: needs a CUDA GPU (or --device cpu --modes dense)", file=sys.stderr)
        return 2
    forbid_flex_fallback()
    results = []
    for mode in a.modes.split(","):
        try:
            with warnings.catch_warnings():
                if mode == "flex-eager":  # this mode is the fallback itself: let it run
                    warnings.filterwarnings("ignore", message=FLEX_FALLBACK_WARNING)
                res = run_mode(mode, a, dev)
        except torch.OutOfMemoryError as exc:
            res = {"mode": mode, "error": f"out of memory: {str(exc).splitlines()[0]}"}
        except Exception as exc:  # report and go on with the other modes
            res = {"mode": mode, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(json.dumps(res), flush=True)
        results.append(res)
        if a.out:  # partial results survive a later mode's timeout
            a.out.write_text(json.dumps({"results": results}, indent=2))
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    report = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "args": vars(a) | {"out": str(a.out)},
        "results": results,
    }
    print(table(results))
    if a.out:
        a.out.write_text(json.dumps(report, indent=2))
    return 0 if all("error" not in r for r in results if r["mode"] != "flex-eager") else 1


def table(results: list[dict]) -> str:
    cols = [
        "mode",
        "median_step_ms",
        "peak_mem_gib",
        "step_mem_gib",
        "drafter_tok_s",
        "block_tok_s",
        "warmup_s",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        lines.append("| " + " | ".join(str(r.get(c, r.get("error", ""))) for c in cols) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
