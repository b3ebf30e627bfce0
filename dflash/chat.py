"""Chat records rendered with the target tokenizer's chat template, loss on assistant turns.

The reference (SpecForge ``specforge/data/preprocessing.py``) renders the whole conversation
with the chat template and supervises the assistant spans, end-of-turn tokens included, found
in the rendered text; everything else (system, user, tool turns, the template's role headers)
carries no loss. Here the spans come from the template itself, not from a per-model regex:
for the assistant turn i, ``render(messages[:i], add_generation_prompt=True)`` ends where the
reply starts and ``render(messages[:i+1])`` ends after its end-of-turn marker; a token of the
full rendering is supervised when it starts inside such a span (offset mapping of a fast
tokenizer). A template that re-renders earlier turns differently (not a prefix of the full
text) is reported, not guessed at.
"""

from __future__ import annotations

from typing import Any

from dflash_train.jsonl import DataError


def _render(tokenizer: Any, messages: list[dict[str, str]], gen_prompt: bool) -> str:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen_prompt)
    return str(text)


def assistant_spans(
    tokenizer: Any, messages: list[dict[str, str]]
) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the character spans of its assistant turns."""
    full = _render(tokenizer, messages, False)
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        start = len(_render(tokenizer, messages[:i], True)) if i else 0
        upto = _render(tokenizer, messages[: i + 1], False)
        if not full.startswith(upto) or start > len(upto):
            raise DataError("the chat template does not render earlier turns as a prefix")
        spans.append((start, len(upto)))
    return full, spans


def render(
    tokenizer: Any, messages: tuple[tuple[str, str], ...], where: str
) -> tuple[list[int], list[int]]:
    """Token ids and the loss mask (1 on assistant tokens) of one chat record."""
    chat = [{"role": r, "content": c} for r, c in messages]
    try:
        text, spans = assistant_spans(tokenizer, chat)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    mask = [int(any(lo <= a < hi for lo, hi in spans) and b > a) for a, b in enc["offset_mapping"]]
    return ids, mask
