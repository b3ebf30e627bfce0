"""The frozen target: a local Hugging Face causal LM or a random Qwen3 built from a config.

Features are ``hidden_states[id + 1]`` (index 0 is the embeddings) of the tapped layers,
concatenated on the feature axis (z-lab/dflash extract_context_feature). The forward runs under
no_grad, not inference_mode: inference tensors cannot be saved for backward in the drafter.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from dflash_train.drafter_dir import build_target_layer_ids
from dflash_train.model import DrafterConfig

__all__ = ["build_target_layer_ids"]  # its home is drafter_dir (stdlib); imported from here too


def _text_config(model: nn.Module) -> Any:
    cfg = model.config
    return getattr(cfg, "text_config", None) or cfg


def input_embedding(model: nn.Module) -> Tensor:
    """The target's input embedding matrix ``[vocab, hidden]``."""
    # A transformers model: torch's stubs type Module.__getattr__ as Tensor | Module, so they
    # know neither this method nor that it returns an nn.Embedding.
    emb = model.get_input_embeddings()  # type: ignore[operator]
    weight: Tensor = emb.weight
    return weight


def rope_theta(cfg: Any) -> float:
    """transformers 5 keeps it in rope_parameters; 4.x in rope_theta."""
    params = getattr(cfg, "rope_parameters", None) or {}
    return float(params.get("rope_theta") or getattr(cfg, "rope_theta", None) or 10000.0)


def rope_parameters(cfg: Any) -> dict[str, Any]:
    """The target's RoPE as transformers 5 spells it (``rope_type``, ``rope_theta``, the
    scaling keys); a 4.x config's ``rope_scaling`` is folded in."""
    params = dict(getattr(cfg, "rope_parameters", None) or {})
    legacy = getattr(cfg, "rope_scaling", None)
    if isinstance(legacy, dict):
        params = {**legacy, **params}
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    params.setdefault("rope_type", "default")
    params["rope_theta"] = rope_theta(cfg)
    return params


def drafter_config(
    model: nn.Module, layers: int, block: int, mask_id: int, mask_token: str | None = None
) -> DrafterConfig:
    """The drafter shares the target's widths, heads and head_dim (Qwen3-8B: 5 layers)."""
    cfg = _text_config(model)
    heads = cfg.num_attention_heads
    return DrafterConfig(
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        vocab_size=input_embedding(model).shape[0],
        target_layer_ids=tuple(build_target_layer_ids(cfg.num_hidden_layers, layers)),
        block_size=block,
        mask_token_id=mask_id,
        rms_eps=float(getattr(cfg, "rms_norm_eps", 1e-6)),
        rope_theta=rope_theta(cfg),
        num_target_layers=int(cfg.num_hidden_layers),
        rope_parameters=rope_parameters(cfg),
        max_position_embeddings=int(getattr(cfg, "max_position_embeddings", 32768) or 32768),
        **({"mask_token": mask_token} if mask_token else {}),
    )


def random_qwen3(config: dict[str, Any], seed: int) -> nn.Module:
    """A random Qwen3-style causal LM (no download): the tiny and medium presets' target."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(Qwen3Config(**config))
    return model.eval().requires_grad_(False)


def load_pretrained(path: Path, dtype: torch.dtype) -> nn.Module:
    """The model from a local directory only."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
    return model.eval().requires_grad_(False)


def token_text(tokenizer: Any, token_id: int) -> str | None:
    """The text of ``token_id`` in ``tokenizer`` (None without one, or past its vocabulary)."""
    if tokenizer is None or not 0 <= token_id < len(tokenizer):
        return None
    text = tokenizer.convert_ids_to_tokens(token_id)
    return text if isinstance(text, str) and text else None


def load_tokenizer(path: Path) -> Any:
    """The directory's tokenizer, None if it has none (token-id data needs none)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError):
        return None


def load_config(path: Path) -> Any:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(path, local_files_only=True)


@dataclass
class Target:
    """One replica of the frozen target on one device."""

    model: nn.Module
    layer_ids: tuple[int, ...]
    device: torch.device
    # Workers sharing one copy take turns: hidden-state capture goes through hooks on the
    # modules, thread-safe in transformers 5.23 (a ContextVar) but not promised by every
    # version. Only kernel launches are serialised; one GPU runs them in order anyway.
    lock: threading.Lock = field(default_factory=threading.Lock)

    @torch.no_grad()
    def features(self, input_ids: Tensor) -> Tensor:
        ids = input_ids.to(self.device, non_blocking=True)
        with self.lock:
            out = _backbone(self.model)(input_ids=ids, output_hidden_states=True, use_cache=False)
            hs = out.hidden_states
            return torch.cat([hs[i + 1] for i in self.layer_ids], dim=-1)


def _backbone(model: nn.Module) -> nn.Module:
    """The decoder stack without the LM head: its logits would be wasted work."""
    inner = getattr(model, "model", None)
    return inner if isinstance(inner, nn.Module) else model


def replicate(
    model: nn.Module, devices: list[str], dtype: torch.dtype, layer_ids: tuple[int, ...]
) -> list[Target]:
    """One Target per worker; workers on the same device share one copy of the weights."""
    by_device: dict[str, tuple[nn.Module, threading.Lock]] = {}
    out = []
    for dev in devices:
        if dev not in by_device:
            src = model if not by_device and dev == "cpu" else copy.deepcopy(model)
            by_device[dev] = (src.to(device=dev, dtype=dtype), threading.Lock())
        copy_on_dev, lock = by_device[dev]
        out.append(Target(copy_on_dev, layer_ids, torch.device(dev), lock))
    return out


def embed_and_head(model: nn.Module) -> tuple[Tensor, Tensor]:
    """The frozen embedding and LM head the drafter borrows."""
    embed = input_embedding(model)
    # torch's stubs type Module.__getattr__ as Tensor | Module: not this transformers method
    head = model.get_output_embeddings()  # type: ignore[operator]
    return embed, (head.weight if head is not None else embed)
