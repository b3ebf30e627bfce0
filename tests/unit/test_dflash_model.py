"""The drafter (KV injection, flex vs dense, checkpointing), the target taps, optimiser parts."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dflash_train import checkpoint as ckpt  # noqa: E402
from dflash_train.loss import LossSpec, forward_loss  # noqa: E402
from dflash_train.mask import FLEX_FALLBACK_WARNING, CompileFlags  # noqa: E402
from dflash_train.model import Drafter, DrafterConfig  # noqa: E402
from dflash_train.optim import average_grads, lr_at, make_optimizer, max_replica_diff  # noqa: E402
from dflash_train.presets import TINY_TARGET  # noqa: E402
from dflash_train.target import build_target_layer_ids, random_qwen3, replicate  # noqa: E402

CFG = DrafterConfig(32, 64, 2, 4, 2, 8, 50, (1, 3), 4, 49)


def _drafter(seed: int = 0) -> Drafter:
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(123)
    return Drafter(CFG, torch.randn(50, 32, generator=g), torch.randn(50, 32, generator=g) * 0.1)


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 49, (2, 32), generator=g)
    lm = torch.ones_like(ids)
    lm[:, :4] = 0
    lm[1, 25:] = 0
    return ids, lm, torch.randn(2, 32, 64, generator=g)


@pytest.mark.parametrize(
    ("layers", "n", "expect"),
    [(36, 5, [1, 9, 17, 25, 33]), (6, 2, [1, 3]), (8, 3, [1, 3, 5]), (28, 1, [14])],
)
def test_target_layer_ids_reference_rule(layers: int, n: int, expect: list[int]) -> None:
    assert build_target_layer_ids(layers, n) == expect


def test_frozen_embedding_and_head_are_not_trained_or_saved() -> None:
    d = _drafter()
    names = {n for n, _ in d.named_parameters()}
    assert not any("embed" in n or "lm_head" in n for n in names)
    assert "embed_weight" not in d.state_dict() and "fc.weight" in d.state_dict()
    assert d.fc.weight.shape == (32, 2 * 32)  # n tapped layers x hidden -> hidden


def test_flex_forward_equals_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CompileFlags, "flex", False)  # eager flex: forward only on the CPU
    monkeypatch.setattr(CompileFlags, "block_mask", False)
    d = _drafter()
    ids, lm, feats = _batch()
    out = {}
    for kind in ("dense", "flex"):
        spec = LossSpec(4, 6, 2.0, 49, kind)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=FLEX_FALLBACK_WARNING)
            out[kind] = forward_loss(d, ids, lm, feats, spec, torch.Generator().manual_seed(5))
    assert out["flex"][0].item() == pytest.approx(out["dense"][0].item(), rel=1e-5)
    assert out["flex"][1]["acc"].item() == out["dense"][1]["acc"].item()


def test_grad_checkpoint_same_loss_and_grads() -> None:
    ids, lm, feats = _batch()
    grads = []
    for ckpt_on in (False, True):
        d = _drafter()
        d.grad_checkpoint = ckpt_on
        loss, _ = forward_loss(d, ids, lm, feats, LossSpec(4, 6, 2.0, 49, "dense"),
                               torch.Generator().manual_seed(5))  # fmt: skip
        loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in d.trainable()]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_kv_injection_sees_only_features_before_the_anchor() -> None:
    from dflash_train.loss import block_input_ids, positions
    from dflash_train.mask import dense_mask

    d = _drafter().eval()
    ids, _, feats = _batch()
    anchors, keep = torch.tensor([[10, 20]] * 2), torch.ones(2, 2, dtype=torch.bool)
    noise = d.embed(block_input_ids(ids, anchors, keep, 4, 49))
    pos = positions(32, anchors, 4)
    mask = dense_mask(anchors, keep, 32, 4)
    with torch.no_grad():
        base = d(noise, feats, pos, mask)
        later = feats.clone()
        later[:, 10:] += 5.0  # features at and after the first anchor
        out = d(noise, later, pos, mask)
    assert torch.allclose(out[:, :4], base[:, :4]), "block at 10 must not see position >= 10"
    assert not torch.allclose(out[:, 4:], base[:, 4:]), "block at 20 sees 10..19"


def test_target_features_are_tapped_hidden_states() -> None:
    model = random_qwen3(TINY_TARGET, seed=0)
    (tgt,) = replicate(model, ["cpu"], torch.float32, (1, 3))
    ids = torch.randint(0, 255, (2, 16))
    feats = tgt.features(ids)
    hs = model(input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states
    assert feats.shape == (2, 16, 2 * 64)
    assert torch.allclose(feats, torch.cat([hs[2], hs[4]], dim=-1), atol=1e-5)
    assert not feats.requires_grad and not feats.is_inference()


def test_lr_warmup_then_cosine() -> None:
    assert lr_at(0, 100, 1.0, 0.04) == pytest.approx(0.25)
    assert lr_at(3, 100, 1.0, 0.04) == pytest.approx(1.0)
    assert lr_at(52, 100, 1.0, 0.04) == pytest.approx(0.5)
    assert lr_at(99, 100, 1.0, 0.04) < 0.01


def test_averaged_replicas_stay_identical(tmp_path: Path) -> None:
    reps = [_drafter(), _drafter()]
    assert max_replica_diff([r.trainable() for r in reps]) == 0.0
    opts = [make_optimizer(r.trainable(), 1e-2, 0.0) for r in reps]
    for step in range(2):
        for i, r in enumerate(reps):  # different batches per replica
            ids, lm, feats = _batch(seed=10 * step + i)
            loss, _ = forward_loss(r, ids, lm, feats, LossSpec(4, 6, 2.0, 49, "dense"))
            loss.backward()
        average_grads([r.trainable() for r in reps])
        for o in opts:
            o.step()
            o.zero_grad()
    assert max_replica_diff([r.trainable() for r in reps]) == 0.0
    schedule = {"total_steps": 10, "lr": 1e-2, "warmup_ratio": 0.04}
    path = ckpt.save(tmp_path, 2, reps[0], CFG, opts[0], schedule)
    fresh = _drafter(seed=9)
    opt = make_optimizer(fresh.trainable(), 1e-2, 0.0)
    state = ckpt.load(path)
    assert ckpt.restore(state, fresh, opt) == 2
    assert max_replica_diff([reps[0].trainable(), fresh.trainable()]) == 0.0
    assert ckpt.latest(tmp_path) == path
    assert ckpt.schedule_changes(state["schedule"], schedule) == []
    longer = {**schedule, "total_steps": 20}
    assert ckpt.schedule_changes(state["schedule"], longer) == ["total_steps 10 -> 20"]
    assert ckpt.schedule_changes(None, longer) == []  # a file from before schedules were kept


def test_a_diverged_drafter_is_not_saved_and_stale_temporaries_go(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from dflash_train.events import EventLog
    from dflash_train.presets import PRESETS
    from dflash_train.ranks import World
    from dflash_train.session import _Saver

    model = _drafter()
    rep = SimpleNamespace(model=model, optimizer=make_optimizer(model.trainable(), 1e-2, 0.0))
    rep.params = model.trainable
    b = SimpleNamespace(replicas=[rep], cfg=CFG, start_step=0)
    s = SimpleNamespace(out_dir=tmp_path, preset=PRESETS["tiny"], world=World())
    events = EventLog(tmp_path / "ev.jsonl")
    save = _Saver(s, b, events)  # type: ignore[arg-type]
    (tmp_path / "checkpoints").mkdir()
    stale = tmp_path / "checkpoints" / "step_00000001.pt.tmp"  # a save cut short by SIGKILL
    stale.write_bytes(b"torn")
    save(2)
    assert ckpt.latest(tmp_path) == tmp_path / "checkpoints" / "step_00000002.pt"
    assert not stale.exists() and save.last == 2
    with torch.no_grad():
        next(iter(model.trainable())).fill_(float("nan"))
    save(3)  # diverged: the good checkpoint stays the latest
    assert ckpt.latest(tmp_path) == tmp_path / "checkpoints" / "step_00000002.pt"
    assert save.last == 2
    events.close()
    warned = [e for e in map(json.loads, (tmp_path / "ev.jsonl").open()) if e["event"] == "warning"]
    assert warned and "not finite" in warned[0]["message"]


def test_a_graph_compiled_after_warm_up_is_reported_at_the_step(tmp_path: Path) -> None:
    """The seed's chain began with a recompile in a worker thread: say so at once."""
    from dflash_train.events import EventLog
    from dflash_train.pipeline import Pipeline, Plan, Replica, Report

    model = _drafter()
    rep = Replica(model, make_optimizer(model.trainable(), 1e-2, 0.0), torch.device("cpu"))
    spec = LossSpec(4, 6, 2.0, 49, "dense")
    plan = Plan(10, 0, 1e-2, 0.1, 1.0, 1, 0, spec, None, None, 60.0, 4)
    events = EventLog(tmp_path / "ev.jsonl")
    pipe = Pipeline(plan, [], [rep], iter([]), events, lambda step: None)
    pipe.reports = [Report(1.0, 0.0, 1.0, 64, 0.01)]
    pipe._on_step()  # warmed: nothing compiled since
    torch.compile(lambda x: x * 2 + 1, backend="eager")(torch.ones(3))  # a new graph
    pipe._on_step()
    pipe._on_step()  # reported once, not again at every later step
    events.close()
    warned = [e for e in map(json.loads, (tmp_path / "ev.jsonl").open()) if e["event"] == "warning"]
    assert [w["message"] for w in warned] == ["1 graph(s) compiled after warm-up, by step 2"]
