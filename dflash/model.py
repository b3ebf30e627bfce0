"""The DFlash drafter: Qwen3-style layers with KV injection of the fused target features.

Architecture (z-lab/dflash dflash/model.py; SpecForge specforge/modeling/draft/dflash.py):
- ctx = RMSNorm(Linear(n*H -> H, no bias)(concat of the tapped target layers)), the same in
  every layer (not updated layer to layer, not passed through a layer's input norm);
- queries come only from the block tokens; keys/values are k_proj/v_proj of cat[ctx, block],
  with q_norm/k_norm and RoPE (context at 0..S-1, a block at anchor..anchor+B-1);
- no embedding or LM head of its own: the target's frozen ones, held as non-persistent buffers
  so checkpoints and the optimizer see only the drafter's own weights.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from dflash_train.mask import Mask, attend


@dataclass(frozen=True)
class DrafterConfig:
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    target_layer_ids: tuple[int, ...]
    block_size: int
    mask_token_id: int
    rms_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    # The target's: the drafter rotates as it does (scaled RoPE included) and an export says so.
    num_target_layers: int = field(default=0, compare=False)  # 0: an older checkpoint
    rope_parameters: dict[str, Any] | None = field(default=None, compare=False)
    max_position_embeddings: int = field(default=32768, compare=False)
    # The mask token's text in the target's tokenizer, for SGLang's dflash_config.mask_token
    # (its default, the token it adds to a tokenizer without one: Qwen3's id 151669).
    mask_token: str = field(default="<|MASK|>", compare=False)

    def rope(self) -> dict[str, Any]:
        """transformers 5's ``rope_parameters`` (rope_type, rope_theta, scaling keys)."""
        return dict(self.rope_parameters or {"rope_type": "default", "rope_theta": self.rope_theta})

    def to_json(self) -> dict:
        return {**asdict(self), "target_layer_ids": list(self.target_layer_ids)}

    @classmethod
    def from_json(cls, d: dict) -> DrafterConfig:
        return cls(**{**d, "target_layer_ids": tuple(d["target_layer_ids"])})

    def same_shape(self, other: DrafterConfig) -> bool:
        """Equal but for the RoPE dict (compared here by value, not by the dataclass)."""
        return self == other and self.rope() == other.rope()


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        # Normalise in fp32 (bf16 variance is too coarse), return the input's dtype.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * xf).to(x.dtype)


def rotary_embedding(cfg: DrafterConfig) -> nn.Module:
    """transformers' own rotary embedding for the target's RoPE (default, linear, dynamic,
    llama3, yarn: ``ROPE_INIT_FUNCTIONS``), the module z-lab's DFlashDraftModel builds from the
    exported config, so the two rotate identically."""
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

    hf = Qwen3Config(
        hidden_size=cfg.hidden_size,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.head_dim,
        max_position_embeddings=cfg.max_position_embeddings,
        rope_parameters=cfg.rope(),
    )
    return Qwen3RotaryEmbedding(hf)


def rope(rotary: nn.Module, positions: Tensor) -> tuple[Tensor, Tensor]:
    """cos, sin ``[B, L, head_dim]`` (fp32, attention scaling applied) for positions ``[B, L]``."""
    probe = torch.zeros(1, device=positions.device, dtype=torch.float32)
    cos, sin = rotary(probe, positions)
    return cos, sin


def _rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x ``[B, heads, L, D]``; cos/sin ``[B, L, D]``."""
    cos, sin = cos[:, None].to(x.dtype), sin[:, None].to(x.dtype)
    return x * cos + _rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, cfg: DrafterConfig) -> None:
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, d
        self.q_proj = nn.Linear(h, cfg.num_heads * d, bias=False)
        self.k_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=False)
        self.v_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * d, h, bias=False)
        self.q_norm = RMSNorm(d, cfg.rms_eps)
        self.k_norm = RMSNorm(d, cfg.rms_eps)

    def forward(self, x: Tensor, ctx: Tensor, cos: Tensor, sin: Tensor, mask: Mask) -> Tensor:
        bsz, q_len, _ = x.shape
        kv_in = torch.cat([ctx, x], dim=1)  # KV injection: context keys, then the block keys
        q = self.q_norm(self.q_proj(x).view(bsz, q_len, self.heads, self.head_dim))
        k = self.k_norm(self.k_proj(kv_in).view(bsz, -1, self.kv_heads, self.head_dim))
        v = self.v_proj(kv_in).view(bsz, -1, self.kv_heads, self.head_dim)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = apply_rope(q, cos[:, -q_len:], sin[:, -q_len:])
        k = apply_rope(k, cos, sin)
        # One dtype for the kernel; autocast stays off inside (flex has no autocast rule on
        # every torch version, and the dense path must match it bit for bit in dtype).
        dev = x.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else x.dtype
        with torch.autocast(dev, enabled=False):
            out = attend(q.to(dtype), k.to(dtype), v.to(dtype), mask)
        return self.o_proj(out.transpose(1, 2).reshape(bsz, q_len, -1))


class MLP(nn.Module):
    def __init__(self, cfg: DrafterConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: DrafterConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)

    def forward(self, x: Tensor, ctx: Tensor, cos: Tensor, sin: Tensor, mask: Mask) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), ctx, cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Drafter(nn.Module):
    """Block-diffusion drafter. ``forward`` returns normed hidden states of the block tokens."""

    # Buffers (register_buffer below), declared so they type as tensors, not Tensor | Module.
    embed_weight: Tensor
    lm_head_weight: Tensor

    def __init__(self, cfg: DrafterConfig, embed: Tensor, lm_head: Tensor) -> None:
        super().__init__()
        self.cfg = cfg
        n_feat = len(cfg.target_layer_ids) * cfg.hidden_size
        self.fc = nn.Linear(n_feat, cfg.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.rotary = rotary_embedding(cfg)  # inv_freq is a non-persistent buffer: not saved
        self.grad_checkpoint = False
        # The target's frozen embedding and LM head: buffers, not parameters, not saved.
        self.register_buffer("embed_weight", embed.detach().clone(), persistent=False)
        self.register_buffer("lm_head_weight", lm_head.detach().clone(), persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        for mod in self.modules():
            if isinstance(mod, nn.Linear):
                nn.init.normal_(mod.weight, std=0.02)

    def embed(self, ids: Tensor) -> Tensor:
        return F.embedding(ids, self.embed_weight)

    def forward(self, noise_emb: Tensor, features: Tensor, positions: Tensor, mask: Mask) -> Tensor:
        """noise_emb ``[B,Q,H]``, features ``[B,S,n*H]``, positions ``[B,S+Q]`` -> ``[B,Q,H]``."""
        ctx = self.hidden_norm(self.fc(features.to(self.fc.weight.dtype)))
        cos, sin = rope(self.rotary, positions)
        x = noise_emb.to(ctx.dtype)
        for layer in self.layers:
            if self.grad_checkpoint and torch.is_grad_enabled():
                # use_reentrant=False: the reentrant form rejects keyword arguments and
                # re-enters autograd; the BlockMask travels as an argument.
                x = checkpoint(layer, x, ctx, cos, sin, mask, use_reentrant=False)
            else:
                x = layer(x, ctx, cos, sin, mask)
        return self.norm(x)

    def trainable(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]
