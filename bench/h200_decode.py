"""Upstream DFlash decoding with an exported drafter against its target: does upstream's
decoder serve our drafter, at what acceptance length.

Run from a folder where ``import dflash`` is upstream's (PyPI ``dflash``), not the repo's
``dflash/``: ``python3 /path/bench/h200_decode.py EXPORT TARGET CHAT.jsonl [N] [NEW]``.
Prints one JSON line: mean acceptance length (tokens per target forward, upstream's
``acceptance_lengths``), tokens/s, whether every output equals the target's greedy one, and
where each first differs. ``DECODE_DTYPE=float32`` decodes in fp32 with TF32 off: in bf16 a
target whose logits nearly tie (random weights) can pick another argmax in a block-verify
forward than in a one-token forward, which is arithmetic, not the drafter.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import dflash.model
from dflash.model import DFlashDraftModel, dflash_generate


def main() -> None:
    export, target_dir, data = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    new = int(sys.argv[5]) if len(sys.argv) > 5 else 256
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    want = os.environ.get("DECODE_DTYPE", "bfloat16" if dev == "cuda" else "float32")
    dtype = getattr(torch, want)
    if dtype == torch.float32:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if dev == "cpu":  # upstream's stats synchronise CUDA; a CPU smoke run times without it
        dflash.model._cuda_time = time.perf_counter  # type: ignore[attr-defined]
    target = AutoModelForCausalLM.from_pretrained(target_dir, dtype=dtype).to(dev).eval()
    tok = AutoTokenizer.from_pretrained(target_dir)
    draft, info = DFlashDraftModel.from_pretrained(export, output_loading_info=True, dtype=dtype)
    draft = draft.to(dev).eval()
    with open(data, encoding="utf-8") as fh:
        chats = [json.loads(ln)["messages"] for ln in fh][:n]
    accept, lossless, tokens, secs, diverged = [], True, 0, 0.0, []
    for msgs in chats:
        first = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        prompt = tok.apply_chat_template(msgs[:first], tokenize=False, add_generation_prompt=True)
        ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"].to(dev)
        t0 = time.perf_counter()
        st = dflash_generate(draft, target, ids, new, None, return_stats=True)
        secs += time.perf_counter() - t0
        tokens += st.num_output_tokens
        accept += st.acceptance_lengths
        with torch.no_grad():
            ref = target.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
        m = min(ref.shape[1], st.output_ids.shape[1])
        same = ref[0, :m] == st.output_ids[0, :m]
        lossless &= bool(same.all())
        bad = (~same).nonzero()
        diverged.append(int(bad[0, 0]) - ids.shape[1] if len(bad) else None)
    print(
        json.dumps(
            {
                "missing": sorted(info["missing_keys"]),
                "unexpected": sorted(info["unexpected_keys"]),
                "prompts": len(chats),
                "new_tokens": new,
                "mean_acceptance_length": sum(accept) / max(len(accept), 1),
                "decode_tok_s": tokens / max(secs, 1e-9),
                "lossless": lossless,
                "dtype": want,
                "first_divergence": diverged,  # new-token index per prompt, null: none
            }
        )
    )


if __name__ == "__main__":
    main()
