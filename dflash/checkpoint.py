"""Periodic drafter checkpoints and ``--resume`` (replica 0 is saved; all replicas are equal).

A checkpoint holds the drafter's own weights (not the target's borrowed embedding/LM head),
its config, the optimiser state, the step and the learning-rate schedule. Written to a
temporary name and renamed, so a killed run never leaves a torn file behind.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dflash_train.model import DrafterConfig
from dflash_train.presets import Preset

_NAME = re.compile(r"^step_(\d+)\.pt$")


def checkpoint_dir(out_dir: Path) -> Path:
    return out_dir / "checkpoints"


def save(
    out_dir: Path,
    step: int,
    model: nn.Module,
    cfg: DrafterConfig,
    optimizer: torch.optim.Optimizer,
    schedule: dict[str, float],
) -> Path:
    folder = checkpoint_dir(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step_{step:08d}.pt"
    for stale in folder.glob("step_*.pt.tmp"):  # a save cut short by SIGKILL (one writer: us)
        stale.unlink(missing_ok=True)
    tmp = path.with_suffix(".pt.tmp")
    state = {
        "step": step,
        "drafter_config": cfg.to_json(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "schedule": schedule,  # total steps, lr, warm-up: a resume that changes them is told
    }
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def latest(out_dir: Path) -> Path | None:
    folder = checkpoint_dir(out_dir)
    if not folder.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return max(found)[1] if found else None


def resolve_resume(spec: str | None, out_dir: Path) -> Path | None:
    """``auto``: the latest checkpoint in the out dir, or none (a fresh start)."""
    if spec is None:
        return None
    if spec == "auto":
        return latest(out_dir)
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"--resume {spec}: no such checkpoint file")
    return path


def load(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def restore(state: dict[str, Any], model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load weights and optimiser state into one replica; returns the step to continue from.

    The optimiser state is copied: ``load_state_dict`` keeps a tensor already on the right
    device and dtype as it is, so replicas on one device restored from one state would share
    their AdamW moments (each replica's step then updates them again, and the replicas drift
    apart: seen as ``max_replica_diff`` 1e-3 after a resume with 2 CPU replicas)."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    return int(state["step"])


def schedule_of(p: Preset) -> dict[str, float]:
    return {"total_steps": p.steps, "lr": p.lr, "warmup_ratio": p.warmup_ratio}


def schedule_changes(saved: dict[str, float] | None, now: dict[str, float]) -> list[str]:
    """What differs between a checkpoint's schedule and this run's (older files have none)."""
    if not saved:
        return []
    return [f"{k} {saved[k]:g} -> {v:g}" for k, v in now.items() if k in saved and saved[k] != v]
