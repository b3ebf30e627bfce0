"""Samples and batches: from JSONL records, or generated greedily by the target itself.

Sequences are right-padded up to a multiple of the bucket size and every batch holds
``batch_size`` sequences of one bucket, so the compiled kernels see a small, known set of
shapes that can all be warmed before the workers start. Padding is never supervised, and
no anchor can see it (context keys stop strictly before the anchor).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from dflash_train.chat import render
from dflash_train.jsonl import Record
from dflash_train.target import input_embedding


@dataclass(frozen=True)
class Sample:
    ids: tuple[int, ...]
    mask: tuple[int, ...]  # 1 where the token is supervised


@dataclass
class Batch:
    input_ids: Tensor  # [B, S] long
    loss_mask: Tensor  # [B, S] long
    index: int = 0  # position in the stream (for faults and logs)


def from_records(records: list[Record], tokenizer: Any, seq_len: int) -> list[Sample]:
    out = []
    for rec in records:
        if rec.ids is not None:
            ids, mask = list(rec.ids), list(rec.mask or [1] * len(rec.ids))
        elif rec.messages is not None:
            ids, mask = render(tokenizer, rec.messages, f"line {rec.line}")
        elif rec.text is not None:
            ids = tokenizer(rec.text, add_special_tokens=False)["input_ids"]
            mask = [1] * len(ids)
        else:
            p = tokenizer(rec.prompt, add_special_tokens=False)["input_ids"]
            r = tokenizer(rec.response, add_special_tokens=False)["input_ids"]
            ids, mask = p + r, [0] * len(p) + [1] * len(r)
        out.append(Sample(tuple(ids[:seq_len]), tuple(mask[:seq_len])))
    return out


def keep_trainable(samples: list[Sample], block: int) -> list[Sample]:
    """Drop samples with fewer than 2 blocks of supervised tokens (the recipe's filter)."""
    return [s for s in samples if sum(s.mask) >= 2 * block]


@torch.no_grad()
def generate(
    model: nn.Module,
    n: int,
    prompt_len: int,
    seq_len: int,
    avoid: int | None,
    seed: int,
    chunk: int = 64,
) -> list[Sample]:
    """Random prompts, continued greedily by the target: "target-generated" responses."""
    vocab = input_embedding(model).shape[0]
    dev = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    out: list[Sample] = []
    for lo in range(0, n, chunk):
        rows = min(chunk, n - lo)
        prompt = torch.randint(0, vocab, (rows, prompt_len), generator=gen)
        if avoid is not None:  # keep the mask token out of the prompts
            prompt = torch.where(prompt == avoid, (prompt + 1) % vocab, prompt)
        new = seq_len - prompt_len
        # torch's stubs type Module.__getattr__ as Tensor | Module: not this transformers method
        full = model.generate(  # type: ignore[operator]
            prompt.to(dev),
            attention_mask=torch.ones_like(prompt, device=dev),
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            pad_token_id=0,
            # The mask token must never be a target: a random target would emit it now and then.
            suppress_tokens=None if avoid is None else [avoid],
        )
        for row in full.cpu().tolist():
            out.append(Sample(tuple(row), tuple([0] * prompt_len + [1] * (len(row) - prompt_len))))
    return out


def padded_len(length: int, bucket: int, seq_len: int) -> int:
    return min(seq_len, -(-length // bucket) * bucket)


def collate(samples: list[Sample], length: int, index: int = 0) -> Batch:
    ids = torch.zeros(len(samples), length, dtype=torch.long)
    mask = torch.zeros(len(samples), length, dtype=torch.long)
    for i, s in enumerate(samples):
        ids[i, : len(s.ids)] = torch.tensor(s.ids)
        mask[i, : len(s.mask)] = torch.tensor(s.mask)
    return Batch(ids, mask, index)


class BatchStream:
    """Endless shuffled batches of one bucket each; ``shapes`` lists every (batch, length)."""

    def __init__(
        self, samples: list[Sample], batch_size: int, bucket: int, seq_len: int, seed: int
    ):
        if not samples:
            raise ValueError("no trainable samples (each needs 2 blocks of supervised tokens)")
        self.batch_size = batch_size
        self.buckets: dict[int, list[Sample]] = {}
        for s in samples:
            self.buckets.setdefault(padded_len(len(s.ids), bucket, seq_len), []).append(s)
        self.rng = random.Random(seed)
        self.held_out: list[Sample] = []
        self.held_out_len = 0
        self._hold_out()

    def _hold_out(self) -> None:
        """Keep one batch out of training for the before/after eval, so it measures what the
        drafter learned rather than what it memorised; only when its bucket keeps at least a
        batch to train on (same shape: the eval runs through the graphs warmed for training)."""
        length = max(self.buckets, key=lambda n: (len(self.buckets[n]), -n))
        items = sorted(self.buckets[length], key=lambda s: s.ids)
        if len(items) >= 2 * self.batch_size:
            self.held_out, self.buckets[length] = items[: self.batch_size], items[self.batch_size :]
            self.held_out_len = length

    @property
    def shapes(self) -> list[tuple[int, int]]:
        return [(self.batch_size, length) for length in sorted(self.buckets)]

    def _epoch(self) -> list[tuple[int, list[Sample]]]:
        batches = []
        for length, items in self.buckets.items():
            items = items[:]
            self.rng.shuffle(items)
            while len(items) % self.batch_size:  # a short bucket repeats samples: fixed shapes
                items.append(self.rng.choice(items))
            for i in range(0, len(items), self.batch_size):
                batches.append((length, items[i : i + self.batch_size]))
        self.rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[Batch]:
        index = 0
        while True:
            for length, items in self._epoch():
                yield collate(items, length, index)
                index += 1

    def shard(self, rank: int, world: int, replicas: int) -> Iterator[Batch]:
        """Rank ``rank``'s part of the stream under torchrun: batch n of the (same, seeded)
        stream goes to global replica n mod (world x replicas), held by rank (n mod G) div
        replicas; renumbered 0, 1, 2, ... so the pipeline deals them to its replicas as in
        one process. Every rank walks the whole stream (the shuffles stay in step) but only
        collates its own batches."""
        g = world * replicas
        n = 0
        while True:
            for length, items in self._epoch():
                owner, local = divmod(n % g, replicas)
                if owner == rank:
                    yield collate(items, length, (n // g) * replicas + local)
                n += 1

    def first(self) -> Batch:
        """The fixed eval batch, the same before and after: the held-out one when there is
        one, else (too few samples) the first batch of the shortest bucket."""
        if self.held_out:
            return collate(self.held_out, self.held_out_len, -1)
        length = min(self.buckets)
        items = sorted(self.buckets[length], key=lambda s: s.ids)[: self.batch_size]
        while len(items) < self.batch_size:
            items.append(items[0])
        return collate(items, length, -1)
