"""Which process of a torchrun job this is, from the environment torchrun sets (stdlib only).

Read before torch is imported, so the first log line can carry the rank and the checks that
write (out dir, events file, export dir, resume file) can be left to rank 0 alone: two ranks
trying the same out dir at once would race (one creating what the other's check removes).
A job is distributed only when ``WORLD_SIZE`` > 1; ``torchrun --nproc-per-node 1`` and no
torchrun at all both run the single-process pipeline, unchanged.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass

from dflash_train.usage import UsageError


@dataclass(frozen=True)
class DistFlags:
    """Flags of a job of several processes (torchrun); unused in a single process."""

    timeout: float = 300.0  # seconds a collective may wait for a peer before the job fails
    backend: str = "auto"  # auto: nccl on CUDA, gloo on the CPU
    checksum_every: int = 50  # steps between cross-rank weight checksums (0: start and end)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0  # the process's number on its host: which GPUs it owns

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def main(self) -> bool:
        """Rank 0 alone writes checkpoints, the export, events and ``step=`` lines."""
        return self.rank == 0


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"${name}={raw!r} is not an integer (set by torchrun)") from None


def world_from_env(environ: Mapping[str, str] | None = None) -> World:
    """``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK`` as torchrun sets them; absent: one process."""
    env = os.environ if environ is None else environ
    size = _int(env, "WORLD_SIZE", 1)
    if size <= 1:
        return World()
    rank = _int(env, "RANK", -1)
    if not 0 <= rank < size:
        raise UsageError(f"$RANK={env.get('RANK')!r} is not in 0..{size - 1} ($WORLD_SIZE={size})")
    return World(rank=rank, size=size, local_rank=max(0, _int(env, "LOCAL_RANK", 0)))


def add_dist_flags(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("several processes (under torchrun; see docs/pipeline.md)")
    d.add_argument(
        "--dist-timeout",
        type=float,
        default=DistFlags.timeout,
        help="seconds a collective waits for a peer before the job fails (default 300)",
    )
    d.add_argument(
        "--dist-backend",
        choices=["auto", "nccl", "gloo"],
        default="auto",
        help="auto: nccl on CUDA, gloo on the CPU (gloo also runs several ranks on one GPU)",
    )
    d.add_argument(
        "--checksum-every",
        type=int,
        default=DistFlags.checksum_every,
        help="steps between cross-rank weight checksums (event replica_checksum; default 50)",
    )
    d.add_argument(
        "--rank-gpu-offset",
        type=int,
        help="GPU indices of local rank k are shifted by k x this (default: the highest "
        "listed index + 1, so each process owns its GPUs; 0: all processes share them)",
    )


def dist_flags(ns: argparse.Namespace) -> DistFlags:
    if not ns.dist_timeout > 0:
        raise UsageError("--dist-timeout must be positive")
    for name, value in (
        ("checksum-every", ns.checksum_every),
        ("rank-gpu-offset", ns.rank_gpu_offset),
    ):
        if value is not None and value < 0:
            raise UsageError(f"--{name} must be non-negative")
    if ns.dist_backend == "nccl" and ns.device == "cpu":
        raise UsageError("--dist-backend nccl needs CUDA; the CPU uses gloo")
    return DistFlags(ns.dist_timeout, ns.dist_backend, ns.checksum_every)


def shift_gpus(
    target: tuple[int, ...], drafter: tuple[int, ...], world: World, offset: int | None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Local rank k's GPUs: the listed ones shifted by k x ``offset`` (default: past the
    highest listed index, so ``--nproc-per-node 2 --target-gpus 0 --drafter-gpus 1`` gives
    rank 0 GPUs 0-1 and rank 1 GPUs 2-3); one process a host (local rank 0) keeps the lists."""
    if not world.local_rank or not (target or drafter):
        return target, drafter
    shift = world.local_rank * (max(target + drafter) + 1 if offset is None else offset)
    return tuple(i + shift for i in target), tuple(i + shift for i in drafter)
