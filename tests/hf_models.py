"""Small Hugging Face targets and a chat tokenizer, built offline for the pipeline's tests.

No download: a word-level ``tokenizers`` tokenizer (fast: it has offset mappings) with a
ChatML-like template, and random Qwen3/Llama models from configs, saved with
``save_pretrained`` so ``dflash-train --target-model DIR`` loads them like any local model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SPECIAL = ["<pad>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
ROLES = ["system", "user", "assistant"]
WORDS = [f"w{i}" for i in range(120)]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
VOCAB = len(SPECIAL) + len(ROLES) + len(WORDS)  # 127


def save_tokenizer(path: Path, chat_template: bool = True) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIAL + ROLES + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.add_special_tokens(SPECIAL)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<|im_end|>",
        mask_token="<|mask|>",
        chat_template=CHAT_TEMPLATE if chat_template else None,
    )
    fast.save_pretrained(path)
    return fast


def small_config(kind: str, **over: Any) -> Any:
    from transformers import LlamaConfig, Qwen3Config

    base = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=512,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    base.update(over)
    return (Qwen3Config if kind == "qwen3" else LlamaConfig)(**base)


LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 32,
}


def save_model(path: Path, kind: str = "qwen3", chat_template: bool = True, **over: Any) -> Path:
    """A random small causal LM and the chat tokenizer in ``path``."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(small_config(kind, **over))
    model.save_pretrained(path)
    save_tokenizer(path, chat_template)
    return path


def chat_record(k: int, turns: int = 2) -> dict[str, Any]:
    """A chat with a system prompt and ``turns`` user/assistant exchanges (words only)."""
    msgs = [{"role": "system", "content": " ".join(WORDS[(k + j) % 120] for j in range(3))}]
    for t in range(turns):
        user = " ".join(WORDS[(k * 7 + t * 3 + j) % 120] for j in range(5))
        reply = " ".join(WORDS[(k * 11 + t * 5 + j * 2) % 120] for j in range(14))
        msgs += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return {"messages": msgs}
