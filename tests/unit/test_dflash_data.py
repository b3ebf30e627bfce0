"""Generated data: the target continues random prompts greedily, never emitting the mask id."""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch")

from dflash_train.data import generate  # noqa: E402
from dflash_train.presets import PRESETS  # noqa: E402
from dflash_train.target import random_qwen3  # noqa: E402

N, PROMPT, SEQ = 8, 8, 40


def _responses(model: torch.nn.Module, avoid: int | None) -> list[int]:
    samples = generate(model, N, PROMPT, SEQ, avoid, seed=5)
    assert all(len(s.ids) == SEQ for s in samples)
    assert all(s.mask == (0,) * PROMPT + (1,) * (SEQ - PROMPT) for s in samples)
    return [t for s in samples for t in s.ids[PROMPT:]]


def test_the_avoided_token_never_appears() -> None:
    model = random_qwen3(PRESETS["tiny"].target_config, seed=0).eval()
    # The token greedy decoding likes most: suppressing it is what the test must see work.
    favourite, count = Counter(_responses(model, None)).most_common(1)[0]
    assert count > 0
    samples = generate(model, N, PROMPT, SEQ, favourite, seed=5)
    assert all(favourite not in s.ids for s in samples)  # prompts and responses


def test_mask_id_defaults_follow_the_model() -> None:
    from dflash_train.build import QWEN3_MASK_ID, default_mask_id

    assert default_mask_id("qwen3", 151936, None)[0] == QWEN3_MASK_ID == 151669
    assert default_mask_id("qwen3_moe", 151936, None)[0] == 151669
    assert default_mask_id("qwen3", 151936, 7)[0] == 7  # a tokenizer's own mask token wins
    assert default_mask_id("qwen3", 256, None)[0] == 255  # a small random Qwen3: no such slot
    assert default_mask_id("llama", 128256, None)[0] == 128255


def test_the_eval_batch_is_held_out_of_training() -> None:
    from itertools import islice

    from dflash_train.data import BatchStream, Sample

    samples = [Sample(tuple(range(i, i + 16)), (0,) * 4 + (1,) * 12) for i in range(10)]
    stream = BatchStream(samples, batch_size=2, bucket=16, seq_len=16, seed=1)
    held = {tuple(row) for row in stream.first().input_ids.tolist()}
    assert len(held) == 2 and stream.first().input_ids.shape == (2, 16)
    seen = {tuple(row) for b in islice(iter(stream), 40) for row in b.input_ids.tolist()}
    assert len(seen) == 8 and not seen & held  # every other sample trains, never these two
    few = BatchStream(samples[:3], batch_size=2, bucket=16, seq_len=16, seed=1)
    assert few.held_out == []  # a batch to train on must remain: eval falls back to training data
