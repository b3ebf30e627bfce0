"""Anchors, block inputs, same-position targets and the decayed weighted CE of DFlash.

Sources: SpecForge specforge/core/dflash.py (OnlineDFlashModel.forward) and its fix commits;
../shared/research/dflash.md "Drafter architecture" and "Recipe".
- block = [anchor token, MASK x (B-1)]; the output at block position k predicts the token at
  anchor+k (same position: shifted labels gave very low acceptance, SpecForge PR #473);
- weights = keep * in_bounds * (k > 0) * loss_mask[a+k] * exp(-(k-1)/gamma), normalised by
  their sum; accuracy uses the same positions without the decay;
- an anchor a is valid if loss_mask[a] and loss_mask[a+1]; N anchors are drawn per step
  without replacement and sorted, padded with keep=False so Q_LEN never changes shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from dflash_train.mask import build_mask
from dflash_train.model import Drafter


def valid_anchor_positions(loss_mask: Tensor) -> Tensor:
    """``[B, S]`` bool: the anchor and the token after it are both supervised."""
    lm = loss_mask.bool()
    valid = torch.zeros_like(lm)
    valid[:, :-1] = lm[:, :-1] & lm[:, 1:]
    return valid


def sample_anchors(
    loss_mask: Tensor, num_anchors: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """``anchors [B, N]`` (sorted, kept first) and ``keep [B, N]``; padded anchors are 0."""
    valid = valid_anchor_positions(loss_mask)
    seq_len = valid.shape[1]
    # A seeded generator may live on another device (eval uses a CPU one for repeatability).
    dev = generator.device if generator is not None else valid.device
    scores = torch.rand(valid.shape, device=dev, generator=generator).to(valid.device)
    scores = torch.where(valid, scores, torch.full_like(scores, 2.0))  # invalid sort last
    take = min(num_anchors, seq_len)
    picked = scores.argsort(dim=1)[:, :take]
    count = valid.sum(dim=1).clamp(max=take)
    keep = torch.arange(take, device=valid.device)[None, :] < count[:, None]
    # Sort the kept anchors by position; padding goes to the end and then becomes 0.
    picked = torch.where(keep, picked, torch.full_like(picked, seq_len)).sort(dim=1).values
    anchors = torch.where(keep, picked, torch.zeros_like(picked))
    if take < num_anchors:
        pad = num_anchors - take
        anchors = F.pad(anchors, (0, pad))
        keep = F.pad(keep, (0, pad))
    return anchors, keep


def block_input_ids(
    input_ids: Tensor, anchors: Tensor, keep: Tensor, block: int, mask_id: int
) -> Tensor:
    """``[B, N*block]``: each block is [anchor token, MASK x (block-1)]; dropped blocks all MASK."""
    bsz, n = anchors.shape
    ids = torch.full((bsz, n, block), mask_id, dtype=input_ids.dtype, device=input_ids.device)
    first = torch.gather(input_ids, 1, anchors)
    ids[:, :, 0] = torch.where(keep, first, torch.full_like(first, mask_id))
    return ids.view(bsz, n * block)


def positions(seq_len: int, anchors: Tensor, block: int) -> Tensor:
    """``[B, S + N*block]``: context 0..S-1, then a..a+block-1 for each anchor a."""
    bsz = anchors.shape[0]
    ctx = torch.arange(seq_len, device=anchors.device).expand(bsz, -1)
    blk = anchors[:, :, None] + torch.arange(block, device=anchors.device)
    return torch.cat([ctx, blk.reshape(bsz, -1)], dim=1)


@dataclass
class Targets:
    ids: Tensor  # [B, N, block] token at anchor+k
    valid: Tensor  # [B, N, block] bool, positions that count (accuracy)
    weights: Tensor  # [B, N, block] float, valid * decay (loss)


def block_targets(
    input_ids: Tensor, loss_mask: Tensor, anchors: Tensor, keep: Tensor, block: int, gamma: float
) -> Targets:
    """Same-position targets with keep, bounds, k>0, loss-mask and decay weights."""
    seq_len = input_ids.shape[1]
    k = torch.arange(block, device=anchors.device)
    idx = anchors[:, :, None] + k  # [B, N, block]
    in_bounds = idx < seq_len
    safe = idx.clamp(max=seq_len - 1).flatten(1)
    ids = torch.gather(input_ids, 1, safe).view_as(idx)
    supervised = torch.gather(loss_mask.bool(), 1, safe).view_as(idx)
    valid = keep[:, :, None] & in_bounds & (k > 0) & supervised
    decay = torch.exp(-(k - 1).clamp(min=0).float() / gamma)
    return Targets(ids, valid, valid.float() * decay)


def _chunk_ce(hidden: Tensor, head: Tensor, tgt: Tensor, w: Tensor) -> tuple[Tensor, Tensor]:
    logits = F.linear(hidden, head.to(hidden.dtype)).float()
    ce = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), reduction="none")
    return (ce * w.flatten()).sum(), logits.argmax(dim=-1)


def weighted_ce(
    hidden: Tensor, head: Tensor, t: Targets, chunk_blocks: int
) -> tuple[Tensor, Tensor]:
    """Loss and predicted ids. Logits are ``N*block x vocab``: huge at real vocab sizes, so they
    are made a chunk of blocks at a time and dropped, recomputed in backward (SpecForge does
    the same with 128 blocks under checkpoint(use_reentrant=False))."""
    bsz, n, block = t.ids.shape
    total = hidden.new_zeros((), dtype=torch.float32)
    preds = []
    for lo in range(0, n, chunk_blocks):
        hi = min(n, lo + chunk_blocks)
        args = (
            hidden[:, lo * block : hi * block],
            head,
            t.ids[:, lo:hi].reshape(bsz, -1),
            t.weights[:, lo:hi].reshape(bsz, -1),
        )
        if torch.is_grad_enabled() and n > chunk_blocks:
            part, pred = checkpoint(_chunk_ce, *args, use_reentrant=False)
        else:
            part, pred = _chunk_ce(*args)
        total = total + part
        preds.append(pred.view(bsz, hi - lo, block))
    loss = total / t.weights.sum().clamp_min(1e-6)
    return loss, torch.cat(preds, dim=1)


def metrics(pred: Tensor, t: Targets, keep: Tensor) -> dict[str, Tensor]:
    """Accuracy over the counted positions and the acceptance length (accepted + 1 bonus).

    Acceptance length of a block: how many of its predictions k=1.. are right before the first
    miss, plus the target's own token (the metric of z-lab/dflash's benchmark).
    """
    with torch.no_grad():
        correct = (pred == t.ids) & t.valid
        acc = correct.sum().float() / t.valid.sum().clamp_min(1).float()
        run = correct[:, :, 1:].long().cumprod(dim=2).sum(dim=2).float() + 1.0
        accept = (run * keep).sum() / keep.sum().clamp_min(1)
    return {"acc": acc, "accept_len": accept, "supervised": t.valid.sum()}


@dataclass(frozen=True)
class LossSpec:
    block: int
    num_anchors: int
    gamma: float
    mask_id: int
    attention: str  # "flex" or "dense"
    chunk_blocks: int = 128


def anchors_for(num_anchors: int, seq_len: int) -> int:
    """Blocks per sample for a batch padded to ``seq_len``: min(N, seq_len), the most valid
    anchors such a sample can have. One count per length bucket, so the compiled shapes stay
    one per bucket, and a short bucket carries no N mostly-empty blocks."""
    return min(num_anchors, seq_len)


def forward_loss(
    drafter: Drafter,
    input_ids: Tensor,
    loss_mask: Tensor,
    features: Tensor,
    spec: LossSpec,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """One DFlash training forward: anchors, mask, drafter, chunked weighted CE."""
    seq_len = input_ids.shape[1]
    n = anchors_for(spec.num_anchors, seq_len)
    anchors, keep = sample_anchors(loss_mask, n, generator)
    noise = drafter.embed(block_input_ids(input_ids, anchors, keep, spec.block, spec.mask_id))
    mask = build_mask(anchors, keep, seq_len, spec.block, spec.attention)
    hidden = drafter(noise, features, positions(seq_len, anchors, spec.block), mask)
    t = block_targets(input_ids, loss_mask, anchors, keep, spec.block, spec.gamma)
    loss, pred = weighted_ce(hidden, drafter.lm_head_weight, t, spec.chunk_blocks)
    return loss, metrics(pred, t, keep)
