"""Run from a neutral folder (``python tests/upstream_check.py EXPORT TARGET``): loads an export
with upstream's DFlashDraftModel (PyPI ``dflash``) and with ours, and prints JSON: the loading
info, the largest output difference on random inputs, and whether upstream's speculative
decoding with the export reproduces the target's greedy output token for token.

TARGET is a Hugging Face model directory, or ``tiny`` for the tiny preset's random target.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from dflash.model import DFlashDraftModel, dflash_generate
from dflash_train.export import config_from_hf, read_dir
from dflash_train.mask import dense_attention  # noqa: F401  (ours: the dense path)
from dflash_train.model import Drafter
from dflash_train.presets import TINY_TARGET
from dflash_train.target import embed_and_head, random_qwen3


def main(export: Path, target_arg: str, new_tokens: int) -> dict:
    torch.manual_seed(1)
    if target_arg == "tiny":
        target = random_qwen3(TINY_TARGET, 0)
    else:
        target = AutoModelForCausalLM.from_pretrained(target_arg, dtype=torch.float32).eval()
    up, info = DFlashDraftModel.from_pretrained(
        export, output_loading_info=True, dtype=torch.float32
    )
    up.eval()
    config, weights = read_dir(export)
    cfg = config_from_hf(config)
    embed, head = embed_and_head(target)
    ours = Drafter(cfg, embed, head)
    ours.load_state_dict(weights, strict=True)
    ours.eval()
    s, q = 24, 2 * cfg.block_size
    feats = torch.randn(1, s, len(cfg.target_layer_ids) * cfg.hidden_size)
    noise = torch.randn(1, q, cfg.hidden_size)
    pos = torch.cat([torch.arange(s), torch.arange(100, 100 + q)])[None]
    with torch.no_grad():
        mask = torch.ones(1, 1, q, s + q, dtype=torch.bool)
        mine = ours(noise, feats, pos, mask)
        theirs = up(position_ids=pos, noise_embedding=noise, target_hidden=feats)
    vocab = cfg.vocab_size
    prompt = torch.randint(0, vocab, (1, 12), generator=torch.Generator().manual_seed(3))
    prompt = torch.where(prompt == cfg.mask_token_id, prompt - 1, prompt)
    with torch.no_grad():
        ref = target.generate(
            prompt, max_new_tokens=new_tokens, do_sample=False, min_new_tokens=new_tokens
        )
    stats = dflash_generate(up, target, prompt, new_tokens, None, return_stats=False)
    n = min(ref.shape[1], stats.shape[1])
    return {
        "missing": sorted(info["missing_keys"]),
        "unexpected": sorted(info["unexpected_keys"]),
        "mismatched": sorted(map(str, info["mismatched_keys"])),
        "max_abs_diff": float((mine - theirs).abs().max()),
        "lossless": bool(torch.equal(ref[:, :n], stats[:, :n])) and n == ref.shape[1],
        "spec_len": int(stats.shape[1]),
        "ref_len": int(ref.shape[1]),
        "rope_type": up.rotary_emb.rope_type,
    }


if __name__ == "__main__":
    out = main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 24)
    print(json.dumps(out))
