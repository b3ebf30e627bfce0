"""Named training setups (stdlib only). A preset fills every knob the command line leaves out.

``tiny``: a random 6-layer Qwen3-style target (vocab 256) built from a config, data generated
greedily by that target, a 2-layer drafter with blocks of 4: trains on 2 CPU cores in seconds
(numbers from the research notes, ../shared/research/dflash.md "Tiny stand-in target").
``medium``: Qwen3-0.6B-like widths (hidden 1024, 16/8 heads, head_dim 128, vocab 151936) cut to
8 target layers, a 3-layer drafter, seq 2048, block 16, 512 anchors: the recipe's shapes at a
size that shows the compiled flex path on one GPU (data: 1536 random prompt tokens continued
greedily by the target for 512 tokens, so generation stays short).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    # A random Qwen3 target is built from this config; None: the run needs --target-model.
    target_config: dict[str, Any] | None
    drafter_layers: int
    block_size: int
    num_anchors: int
    seq_len: int
    bucket: int  # sequence lengths are padded up to a multiple of this (few compiled shapes)
    batch_size: int  # per drafter worker
    steps: int
    lr: float
    warmup_ratio: float = 0.04
    grad_accum: int = 1  # micro-batches per replica per step: global batch = batch x R x this
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    loss_gamma: float | None = None  # None: by block size (7 for 16, 5 for 10, 4 for 8)
    mask_token_id: int | None = None
    gen_samples: int = 0  # samples the target generates when no --data is given
    gen_prompt_len: int = 8
    grad_checkpoint: bool = True
    loss_chunk_blocks: int = 128  # blocks per chunk of the chunked, checkpointed loss
    log_every: int = 1
    checkpoint_every: int = 0  # 0: only at the end
    eval_batches: int = 1
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def with_overrides(self, **kw: Any) -> Preset:
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


TINY_TARGET = {
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 512,
}

MEDIUM_TARGET = {
    "vocab_size": 151936,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 4096,
}

PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        name="tiny",
        target_config=TINY_TARGET,
        drafter_layers=2,
        block_size=4,
        num_anchors=8,
        seq_len=64,
        bucket=64,
        batch_size=4,
        steps=60,
        lr=3e-3,
        warmup_ratio=0.05,
        mask_token_id=255,
        gen_samples=96,
        gen_prompt_len=8,
        grad_checkpoint=False,
    ),
    "medium": Preset(
        name="medium",
        target_config=MEDIUM_TARGET,
        drafter_layers=3,
        block_size=16,
        num_anchors=512,
        seq_len=2048,
        bucket=256,
        batch_size=1,
        steps=30,
        lr=6e-4,
        mask_token_id=151669,  # Qwen3's <|MASK|> slot
        gen_samples=6,
        # Random prompt, 512 greedy response tokens (the supervised part): HF generate took
        # ~62 ms a token on the device machine's H200, so 1024 tokens cost a minute.
        gen_prompt_len=1536,
        checkpoint_every=0,
    ),
    # Any local Hugging Face causal LM (--target-model); the recipe's shapes.
    "recipe": Preset(
        name="recipe",
        target_config=None,
        drafter_layers=5,
        block_size=16,
        num_anchors=512,
        seq_len=3072,
        bucket=256,
        batch_size=1,
        # SpecForge's Qwen3-8B DFlash example trains 8 GPUs x --batch-size 4 = 32 sequences a
        # step at lr 6e-4; with the default 3 drafter GPUs, 3 x 8 = 24.
        grad_accum=8,
        steps=1000,
        lr=6e-4,
        checkpoint_every=500,
        log_every=10,
        eval_batches=0,
    ),
}


def gamma_for_block(block_size: int) -> float:
    """Loss decay constant of the recipe: 7 for B=16, 5 for B=10, 4 for B=8, else B/2."""
    return {16: 7.0, 10: 5.0, 8: 4.0}.get(block_size, max(1.0, block_size / 2))
