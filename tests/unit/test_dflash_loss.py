"""Anchors, block inputs, same-position targets, loss masking and decay, the metrics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from dflash_train.loss import (  # noqa: E402
    block_input_ids,
    block_targets,
    metrics,
    positions,
    sample_anchors,
    valid_anchor_positions,
    weighted_ce,
)

MASK = 99


def test_valid_anchor_needs_supervised_anchor_and_next_token() -> None:
    lm = torch.tensor([[0, 1, 1, 1, 0, 1, 1, 0]])
    assert valid_anchor_positions(lm).long().tolist() == [[0, 1, 1, 0, 0, 1, 0, 0]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 1), min_size=12, max_size=12), min_size=1, max_size=3),
    st.integers(1, 16),
    st.integers(0, 2**31 - 1),
)
def test_anchors_only_where_valid(rows: list[list[int]], n: int, seed: int) -> None:
    lm = torch.tensor(rows)
    anchors, keep = sample_anchors(lm, n, torch.Generator().manual_seed(seed))
    valid = valid_anchor_positions(lm)
    assert anchors.shape == keep.shape == (len(rows), n)  # fixed shape: no recompiles
    for b in range(len(rows)):
        kept = anchors[b][keep[b]].tolist()
        assert all(valid[b, a] for a in kept)
        assert kept == sorted(set(kept)), "sorted, drawn without replacement"
        assert len(kept) == min(n, int(valid[b].sum()))
        assert keep[b].tolist() == sorted(keep[b].tolist(), reverse=True), "kept ones first"
        assert (anchors[b][~keep[b]] == 0).all()


def test_anchors_redrawn_each_call() -> None:
    lm = torch.ones(1, 64, dtype=torch.long)
    draws = {tuple(sample_anchors(lm, 4)[0][0].tolist()) for _ in range(8)}
    assert len(draws) > 1


def test_block_inputs_anchor_then_mask() -> None:
    ids = torch.arange(10, 30)[None]
    anchors = torch.tensor([[2, 7, 0]])
    keep = torch.tensor([[True, True, False]])
    got = block_input_ids(ids, anchors, keep, 4, MASK).view(3, 4).tolist()
    assert got == [[12, MASK, MASK, MASK], [17, MASK, MASK, MASK], [MASK] * 4]


def test_positions_context_then_blocks() -> None:
    pos = positions(5, torch.tensor([[1, 3]]), 3)
    assert pos.tolist() == [[0, 1, 2, 3, 4, 1, 2, 3, 3, 4, 5]]


def test_targets_at_same_position_not_shifted() -> None:
    ids = torch.arange(100, 120)[None]
    lm = torch.ones_like(ids)
    t = block_targets(ids, lm, torch.tensor([[4, 9]]), torch.tensor([[True, True]]), 4, 7.0)
    # block position k predicts the token at anchor + k (k=0 is the anchor itself)
    assert t.ids[0].tolist() == [[104, 105, 106, 107], [109, 110, 111, 112]]


def test_loss_weights_mask_and_decay() -> None:
    ids = torch.arange(10)[None]
    lm = torch.tensor([[1, 1, 1, 1, 0, 1, 1, 1, 1, 1]])
    anchors = torch.tensor([[2, 7, 0]])
    keep = torch.tensor([[True, True, False]])
    gamma = 2.0
    t = block_targets(ids, lm, anchors, keep, 4, gamma)
    d = [math.exp(-(k - 1) / gamma) for k in range(1, 4)]
    # block at 2: k=0 excluded, 3 supervised, 4 not in the loss mask, 5 supervised
    assert t.weights[0, 0].tolist() == pytest.approx([0.0, d[0], 0.0, d[2]])
    # block at 7: 8, 9 in bounds, 10 past the end
    assert t.weights[0, 1].tolist() == pytest.approx([0.0, d[0], d[1], 0.0])
    assert t.weights[0, 2].tolist() == [0.0] * 4  # dropped block
    assert t.valid[0].tolist() == [
        [False, True, False, True],
        [False, True, True, False],
        [False] * 4,
    ]


def test_weighted_ce_matches_manual_and_chunking() -> None:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 11, (2, 16), generator=g)
    lm = torch.ones_like(ids)
    lm[1, 10:] = 0
    anchors, keep = sample_anchors(lm, 5, g)
    t = block_targets(ids, lm, anchors, keep, 4, 3.0)
    hidden = torch.randn(2, 20, 8, generator=g, requires_grad=True)
    head = torch.randn(11, 8, generator=g)
    loss, pred = weighted_ce(hidden, head, t, chunk_blocks=128)
    logits = (hidden @ head.T).view(2, 5, 4, 11)
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 2), t.ids.flatten(), reduction="none")
    manual = (ce * t.weights.flatten()).sum() / t.weights.sum()
    assert loss.item() == pytest.approx(manual.item(), rel=1e-5)
    assert torch.equal(pred, logits.argmax(-1))
    chunked, _ = weighted_ce(hidden, head, t, chunk_blocks=2)  # checkpointed chunks
    assert chunked.item() == pytest.approx(loss.item(), rel=1e-5)
    (g1,) = torch.autograd.grad(loss, hidden)
    (g2,) = torch.autograd.grad(chunked, hidden)
    assert torch.allclose(g1, g2, atol=1e-6)


def test_loss_ignores_masked_positions() -> None:
    """Changing the logits of a position with weight 0 does not change the loss."""
    ids = torch.arange(12)[None] % 5
    lm = torch.ones_like(ids)
    lm[0, 6] = 0
    anchors, keep = torch.tensor([[4]]), torch.tensor([[True]])
    t = block_targets(ids, lm, anchors, keep, 4, 7.0)
    hidden = torch.randn(1, 4, 6)
    head = torch.randn(5, 6)
    base, _ = weighted_ce(hidden, head, t, 128)
    poked = hidden.clone()
    poked[0, 0] += 10.0  # k = 0: the anchor itself
    poked[0, 2] -= 10.0  # position 6: outside the loss mask
    other, _ = weighted_ce(poked, head, t, 128)
    assert other.item() == pytest.approx(base.item())


def test_accuracy_and_acceptance_length() -> None:
    ids = torch.arange(20)[None]
    lm = torch.ones_like(ids)
    anchors = torch.tensor([[0, 8, 0]])
    keep = torch.tensor([[True, True, False]])
    t = block_targets(ids, lm, anchors, keep, 4, 7.0)
    pred = t.ids.clone()
    pred[0, 0, 2] = -1  # block 0: 1 right, then a miss -> acceptance 1 + 1
    m = metrics(pred, t, keep)
    assert m["accept_len"].item() == pytest.approx(((1 + 1) + (3 + 1)) / 2)
    assert m["acc"].item() == pytest.approx(5 / 6)
