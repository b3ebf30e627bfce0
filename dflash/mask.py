"""The DFlash attention mask: a flex_attention BlockMask (GPU) and its dense boolean twin.

Keys are ``[ctx (S) | blk_0 .. blk_{N-1}]``, queries ``[blk_0 .. blk_{N-1}]`` (N blocks of
``block`` tokens). A query of block b sees a context key kv < S only if kv < anchor[b]
(strictly: at inference the anchor's own target features are not yet known), the keys of its
own block (bidirectional), and nothing at all when block b is not kept.
Sources: SpecForge specforge/core/dflash.py; ../shared/research/dflash.md "Attention mask".
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

FLEX_FALLBACK_WARNING = r".*flex_attention called without torch\.compile.*"

Mask = Tensor | BlockMask


def dense_mask(anchors: Tensor, keep: Tensor, seq_len: int, block: int) -> Tensor:
    """Boolean ``[B, 1, N*block, seq_len + N*block]``: True where a query may see a key."""
    n = anchors.shape[1]
    dev = anchors.device
    q_block = torch.arange(n * block, device=dev) // block  # [Q]
    kv = torch.arange(seq_len + n * block, device=dev)  # [KV]
    anchor_q = anchors[:, q_block]  # [B, Q]
    ctx = (kv[None, None, :] < seq_len) & (kv[None, None, :] < anchor_q[:, :, None])
    kv_block = torch.where(kv >= seq_len, (kv - seq_len) // block, -1)
    own = kv_block[None, :] == q_block[:, None]  # [Q, KV]
    visible = (ctx | own[None]) & keep[:, q_block][:, :, None]
    return visible[:, None]


def mask_mod_for(anchors: Tensor, keep: Tensor, seq_len: int, block: int) -> Callable:
    """The same rule as a flex_attention mask_mod (index arithmetic only, no gathers of masks)."""
    n = anchors.shape[1]

    def dflash_mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        q_block = q_idx // block
        # Q_LEN is padded up to a multiple of the sparse block size (128): clamp the index so
        # the padded rows read a real anchor, and mask them with in_bounds (SpecForge #501/#511).
        safe = q_block.clamp(max=n - 1)
        ctx = (kv_idx < seq_len) & (kv_idx < anchors[b, safe])
        own = (kv_idx >= seq_len) & ((kv_idx - seq_len) // block == q_block)
        return (ctx | own) & keep[b, safe] & (q_block < n)

    return dflash_mask_mod


# Inductor fuses create_block_mask's argsort over the KV blocks into one persistent Triton
# kernel; at the medium preset's shape (Q 8192 x KV 10240) it unrolled to ~110k lines of PTX
# and ptxas ran for minutes (docs/h200-medium-hang-excerpt.log). Without persistent reductions
# Inductor calls aten's sort for it instead (torch/_inductor/ir.py, Sort.create).
COMPILE_OPTIONS: dict[str, dict[str, Any]] = {
    "create_block_mask": {"triton.persistent_reductions": False},
}

_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] = {}


class CompileFlags:
    """What runs compiled. Training on GPU: both. Tests on CPU turn them off (flex has no CPU
    backward; Inductor's CPU backend once failed to build create_block_mask for this mask_mod,
    an indirect load compared with kv_idx, with torch 2.13 at some shape). If the compiled
    create_block_mask fails at warm-up, the eager one is used (slower, more transient memory;
    flex_attention itself never runs uncompiled)."""

    flex = True
    block_mask = True


def _compiled_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """One module-level compiled function per name, made once (threads share its cache)."""
    with _lock:
        if name not in _compiled:
            # dynamic=False: every shape bucket is compiled (and warmed) explicitly; no
            # mode="reduce-overhead": cudagraphs assert in threads (pytorch #123177).
            _compiled[name] = torch.compile(fn, dynamic=False, options=COMPILE_OPTIONS.get(name))
        return _compiled[name]


def flex_block_mask(
    anchors: Tensor, keep: Tensor, seq_len: int, block: int, compiled: bool | None = None
) -> BlockMask:
    """BlockMask with H=None (H=num_heads OOMs at long context, SpecForge #452)."""
    bsz, n = anchors.shape
    compiled = CompileFlags.block_mask if compiled is None else compiled
    make = _compiled_fn("create_block_mask", create_block_mask) if compiled else create_block_mask
    return make(
        mask_mod_for(anchors, keep, seq_len, block),
        bsz,
        None,
        n * block,
        seq_len + n * block,
        device=anchors.device,
    )


def build_mask(anchors: Tensor, keep: Tensor, seq_len: int, block: int, kind: str) -> Mask:
    if kind == "flex":
        return flex_block_mask(anchors, keep, seq_len, block)
    return dense_mask(anchors, keep, seq_len, block)


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Mask, compiled: bool | None = None) -> Tensor:
    """Attention of q ``[B,H,Q,D]`` over k, v ``[B,Hkv,KV,D]`` under either mask form."""
    if isinstance(mask, BlockMask):
        compiled = CompileFlags.flex if compiled is None else compiled
        fn: Callable[..., Any] = flex_attention  # overloaded: no join with a plain Callable
        if compiled:
            fn = _compiled_fn("flex_attention", flex_attention)
        return fn(q, k, v, block_mask=mask, enable_gqa=q.shape[1] != k.shape[1])
    return dense_attention(q, k, v, mask)


def dense_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """SDPA with the boolean mask; rows that see nothing give 0, as flex_attention does.

    A fully masked row would give NaN (softmax over nothing) and poison the gradients, so such
    rows attend to everything and their output is zeroed instead.
    """
    if q.shape[1] != k.shape[1]:  # expand KV heads: plain SDPA with a mask on every version
        rep = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    seen = mask.any(dim=-1, keepdim=True)  # [B,1,Q,1]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~seen)
    return out * seen.to(out.dtype)


def forbid_flex_fallback() -> None:
    """Turn the silent unfused-flex fallback into an error (it ran the seed's run out of memory).

    Past dynamo's recompile limit flex_attention runs eagerly, materialising the full score
    matrix; the only sign is a UserWarning (vllm #27178). Make that warning raise, raise the
    limit so warmed shapes never hit it, and fail instead of falling back where torch can.
    Dynamo config is per thread from torch 2.12 (pytorch #186537): call this in every worker.
    """
    warnings.filterwarnings("error", message=FLEX_FALLBACK_WARNING)
    cfg = torch._dynamo.config
    cfg.recompile_limit = max(getattr(cfg, "recompile_limit", 8), 64)
    cfg.accumulated_recompile_limit = max(getattr(cfg, "accumulated_recompile_limit", 256), 1024)
    if hasattr(cfg, "fail_on_recompile_limit_hit"):
        cfg.fail_on_recompile_limit_hit = True
    # The warning is shown once per process; forget an earlier showing so it fires again.
    shown = getattr(torch.nn.attention.flex_attention, "_WARNINGS_SHOWN", None)
    if isinstance(shown, set):
        shown.discard("flex_attention_performance")


def compile_stats() -> dict[str, int]:
    """Dynamo's graph counters: a rise after warm-up means a worker thread recompiled."""
    from torch._dynamo.utils import counters

    stats: Mapping[str, int] = counters.get("stats", {})
    return {
        "unique_graphs": int(stats.get("unique_graphs", 0)),
        "calls_captured": int(stats.get("calls_captured", 0)),
    }
