"""The DFlash attention mask: the rule itself, and flex_attention equal to the dense mask."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from dflash_train.mask import (  # noqa: E402
    FLEX_FALLBACK_WARNING,
    attend,
    dense_attention,
    dense_mask,
    flex_block_mask,
    forbid_flex_fallback,
    mask_mod_for,
)

S, BLOCK = 24, 4
ANCHORS = torch.tensor([[3, 10, 10, 0], [0, 5, 20, 0]])
KEEP = torch.tensor([[True, True, True, False], [True, True, True, True]])


def _mask() -> torch.Tensor:
    return dense_mask(ANCHORS, KEEP, S, BLOCK)[:, 0]  # [B, Q, KV]


def test_shape() -> None:
    n = ANCHORS.shape[1]
    assert dense_mask(ANCHORS, KEEP, S, BLOCK).shape == (2, 1, n * BLOCK, S + n * BLOCK)


def test_context_strictly_before_anchor() -> None:
    m = _mask()
    for b in range(2):
        for blk in range(4):
            if not KEEP[b, blk]:
                continue
            a = int(ANCHORS[b, blk])
            rows = m[b, blk * BLOCK : (blk + 1) * BLOCK, :S]
            assert rows[:, :a].all(), "every context key before the anchor is visible"
            assert not rows[:, a:].any(), "the anchor's own position and later are hidden"


def test_within_block_bidirectional_and_blocks_invisible_to_each_other() -> None:
    m = _mask()
    for b in range(2):
        for blk in range(4):
            if not KEEP[b, blk]:
                continue
            rows = m[b, blk * BLOCK : (blk + 1) * BLOCK, S:]
            own = rows[:, blk * BLOCK : (blk + 1) * BLOCK]
            assert own.all(), "bidirectional inside the block (also k < q)"
            others = torch.cat([rows[:, : blk * BLOCK], rows[:, (blk + 1) * BLOCK :]], dim=1)
            assert not others.any(), "other blocks are invisible, even at the same anchor"


def test_dropped_blocks_see_nothing() -> None:
    m = _mask()
    assert not m[0, 3 * BLOCK : 4 * BLOCK].any()
    assert m[1, 3 * BLOCK : 4 * BLOCK].any()  # kept, anchor 0: sees its own block only


def test_anchor_zero_sees_only_its_block() -> None:
    m = _mask()
    assert not m[1, :BLOCK, :S].any() and m[1, :BLOCK, S : S + BLOCK].all()


def test_mask_mod_equals_dense_mask_everywhere() -> None:
    n = ANCHORS.shape[1]
    q = torch.arange(n * BLOCK)[:, None]
    kv = torch.arange(S + n * BLOCK)[None, :]
    mod = mask_mod_for(ANCHORS, KEEP, S, BLOCK)
    for b in range(2):
        got = mod(torch.tensor(b), torch.tensor(0), q, kv)
        assert torch.equal(got, _mask()[b])


def _qkv(heads: int = 4, kv_heads: int = 2, dim: int = 16) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    n = ANCHORS.shape[1]
    q = torch.randn(2, heads, n * BLOCK, dim, generator=g)
    k = torch.randn(2, kv_heads, S + n * BLOCK, dim, generator=g)
    v = torch.randn(2, kv_heads, S + n * BLOCK, dim, generator=g)
    return q, k, v


def test_flex_forward_equals_dense_eager() -> None:
    q, k, v = _qkv()
    dense = dense_attention(q, k, v, dense_mask(ANCHORS, KEEP, S, BLOCK))
    bm = flex_block_mask(ANCHORS, KEEP, S, BLOCK, compiled=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FLEX_FALLBACK_WARNING)  # eager on purpose
        flex = attend(q, k, v, bm, compiled=False)
    assert torch.allclose(flex, dense, atol=1e-5), (flex - dense).abs().max()
    assert torch.equal(dense[0, :, 3 * BLOCK :], torch.zeros_like(dense[0, :, 3 * BLOCK :]))


def _avx512() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(
    not _avx512(),
    reason="torch 2.13 Inductor's CPU flex_attention kernel computes wrong values on CPUs "
    "without AVX-512 (an AVX2 AMD EPYC: max diff 1.9, at times nan, simdlen 256 too); the "
    "pipeline never compiles flex on the CPU (refused), its GPU path is checked on the H200",
)
def test_compiled_flex_forward_equals_dense_on_cpu() -> None:
    """torch 2.13 compiles flex_attention's forward on the CPU (about 20 s cold)."""
    q, k, v = _qkv()
    dense = dense_attention(q, k, v, dense_mask(ANCHORS, KEEP, S, BLOCK))
    bm = flex_block_mask(ANCHORS, KEEP, S, BLOCK, compiled=False)
    with warnings.catch_warnings():
        forbid_flex_fallback()  # a silent eager fallback would raise here
        flex = attend(q, k, v, bm, compiled=True)
    assert torch.allclose(flex, dense, atol=1e-5), (flex - dense).abs().max()


@pytest.mark.slow
def test_compiled_block_mask_with_pipeline_options_equals_eager() -> None:
    """The options that keep Inductor's sort out of one giant Triton kernel on the GPU must
    not change the mask: several Q and KV blocks, padded Q_LEN, dropped blocks."""
    g = torch.Generator().manual_seed(3)
    seq, n, block = 256, 40, 4  # Q 160 (two 128-blocks, padded), KV 416 (four)
    anchors = torch.randint(0, seq - block, (2, n), generator=g).sort(dim=1).values
    keep = torch.rand(2, n, generator=g) > 0.2
    eager = flex_block_mask(anchors, keep, seq, block, compiled=False)
    compiled = flex_block_mask(anchors, keep, seq, block, compiled=True)
    assert torch.equal(compiled.to_dense(), eager.to_dense())
    for name in ("kv_num_blocks", "full_kv_num_blocks"):
        assert torch.equal(getattr(compiled, name), getattr(eager, name)), name


def test_fallback_warning_is_an_error() -> None:
    q, k, v = _qkv()
    bm = flex_block_mask(ANCHORS, KEEP, S, BLOCK, compiled=False)
    with warnings.catch_warnings():
        forbid_flex_fallback()
        with pytest.raises(UserWarning, match=r"without torch\.compile"):
            attend(q, k, v, bm, compiled=False)


def test_dense_gradients_are_finite_with_dropped_blocks() -> None:
    q, k, v = (t.requires_grad_() for t in _qkv())
    out = dense_attention(q, k, v, dense_mask(ANCHORS, KEEP, S, BLOCK))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
