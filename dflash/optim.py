"""Optimiser, schedule and the gradient averaging across drafter replicas (no NCCL).

Every drafter worker holds a full replica. After each backward the gradients are averaged
across replicas by plain device copies; each replica then clips and steps its own AdamW on
identical gradients from identical states, so the replicas stay identical without ever
broadcasting weights (checked at the end: ``max_replica_diff``).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def lr_at(step: int, total: int, base: float, warmup_ratio: float) -> float:
    """Linear warm-up over ``warmup_ratio`` of the steps, then cosine to zero."""
    warmup = max(1, math.ceil(total * warmup_ratio))
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def make_optimizer(params: list[nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    # Elementwise updates are deterministic: replicas on one kind of device stay bit-identical.
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


@torch.no_grad()
def average_grads(replicas: list[list[nn.Parameter]]) -> None:
    """Set every replica's gradients to the mean over replicas (replica 0's device sums)."""
    if len(replicas) == 1:
        return
    n = len(replicas)
    for group in zip(*replicas, strict=True):
        grads = [p.grad for p in group]
        if any(g is None for g in grads):
            raise RuntimeError("a drafter replica has no gradient for a trainable weight")
        acc = grads[0].float().clone()
        for g in grads[1:]:
            acc += g.to(acc.device, non_blocking=False).float()
        acc /= n
        for g in grads:
            g.copy_(acc.to(g.device, dtype=g.dtype))


@torch.no_grad()
def max_replica_diff(replicas: list[list[nn.Parameter]]) -> float:
    """Largest absolute weight difference between replica 0 and the others (0.0 expected)."""
    worst = 0.0
    for group in zip(*replicas, strict=True):
        ref = group[0]
        for p in group[1:]:
            worst = max(worst, float((p.detach().to(ref.device) - ref.detach()).abs().max()))
    return worst
