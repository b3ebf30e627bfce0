"""``dflash-train export CHECKPOINT OUT_DIR``: a checkpoint as a Hugging Face drafter directory.

The directory is what z-lab's ``DFlashDraftModel.from_pretrained`` (PyPI ``dflash``), SGLang
and vLLM load: ``config.json`` (``architectures: ["DFlashDraftModel"]``, the Qwen3 keys, the
target's RoPE, ``num_target_layers``, ``block_size``, ``eagle_aux_hidden_state_layer_ids``,
``dflash_config`` with ``mask_token``, ``mask_token_id`` and ``target_layer_ids``) and
``model.safetensors`` (fp32, the training master weights; the engines cast on load). Names and
config are checked against the engines' loader rules (dflash_train.serving) before anything is
written.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from dflash_train.model import DrafterConfig
from dflash_train.serving import aux_layer_ids, check_config, check_names

WEIGHTS = "model.safetensors"


def hf_config(cfg: DrafterConfig) -> dict[str, Any]:
    """The drafter's config.json (keys as z-lab's released drafters and the engines read them)."""
    if cfg.num_target_layers < 1:
        raise ValueError("the checkpoint does not record the target's layer count (re-train)")
    rope = cfg.rope()
    out: dict[str, Any] = {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "vocab_size": cfg.vocab_size,
        "rms_norm_eps": cfg.rms_eps,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "tie_word_embeddings": False,
        "max_position_embeddings": cfg.max_position_embeddings,
        "rope_theta": float(rope["rope_theta"]),
        "rope_parameters": rope,  # transformers 5 (z-lab's model, vLLM)
        "layer_types": ["full_attention"] * cfg.num_layers,
        "use_sliding_window": False,
        "sliding_window": None,
        "dtype": "float32",
        "num_target_layers": cfg.num_target_layers,
        "block_size": cfg.block_size,
        # vLLM's aux hidden state i is the input of the target's layer i, DFlash's layer id the
        # output: one more (serving.py); releases before its DFlash fallback read only this.
        "eagle_aux_hidden_state_layer_ids": aux_layer_ids(cfg.target_layer_ids),
        "dflash_config": {
            "mask_token": cfg.mask_token,
            "mask_token_id": cfg.mask_token_id,
            "target_layer_ids": list(cfg.target_layer_ids),
            "block_size": cfg.block_size,
            "num_target_layers": cfg.num_target_layers,
        },
    }
    if rope.get("rope_type", "default") != "default":
        out["rope_scaling"] = rope  # transformers 4 and SGLang's get_rope_config read this
    return out


def config_from_hf(c: dict[str, Any]) -> DrafterConfig:
    """The DrafterConfig of an exported (or released) drafter's config.json."""
    d = c.get("dflash_config") or {}
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    rope = {**rope, "rope_theta": float(rope.get("rope_theta") or c.get("rope_theta") or 1e6)}
    rope.setdefault("rope_type", rope.pop("type", "default"))
    return DrafterConfig(
        hidden_size=c["hidden_size"],
        intermediate_size=c["intermediate_size"],
        num_layers=c["num_hidden_layers"],
        num_heads=c["num_attention_heads"],
        num_kv_heads=c.get("num_key_value_heads") or c["num_attention_heads"],
        head_dim=c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"],
        vocab_size=c["vocab_size"],
        target_layer_ids=tuple(d["target_layer_ids"]),
        block_size=int(d.get("block_size") or c.get("block_size") or 16),
        mask_token_id=int(d["mask_token_id"]),
        rms_eps=float(c.get("rms_norm_eps", 1e-6)),
        rope_theta=rope["rope_theta"],
        num_target_layers=int(d.get("num_target_layers") or c.get("num_target_layers") or 0),
        rope_parameters=rope,
        max_position_embeddings=int(c.get("max_position_embeddings") or 32768),
        **({"mask_token": d["mask_token"]} if d.get("mask_token") else {}),
    )


def write(out_dir: Path, cfg: DrafterConfig, state: dict[str, torch.Tensor]) -> Path:
    """Write the directory (into a temporary sibling, then renamed: never half a drafter)."""
    from safetensors.torch import save_file

    config = hf_config(cfg)
    check_config(config)
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in state.items()}
    check_names(set(tensors), cfg.num_layers)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        save_file(tensors, str(tmp / WEIGHTS), metadata={"format": "pt"})
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if out_dir.exists():  # checked empty before torch was imported
            out_dir.rmdir()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def export_checkpoint(checkpoint: Path, out_dir: Path) -> Path:
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    cfg = DrafterConfig.from_json(state["drafter_config"])
    return write(out_dir, cfg, state["model"])


def read_dir(path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """config.json and the weights of an exported or released drafter directory."""
    from safetensors.torch import load_file

    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    weights: dict[str, torch.Tensor] = {}
    for f in sorted(path.glob("*.safetensors")):
        weights.update(load_file(str(f)))
    return config, weights
