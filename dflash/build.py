"""Everything the main thread does before the workers start: models, data, compile, warm-up.

Compile and warm-up happen here, in the main thread, for every (drafter device x shape
bucket), with a forward and a backward each: Dynamo/Inductor are not thread-safe (pytorch
#118260, #136833, #168042), so the worker threads must only ever hit compiled code that is
already cached (../shared/research/dflash.md "Threads, torch.compile, checkpointing").
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import torch

from dflash_train import checkpoint as ckpt
from dflash_train.cli import Settings
from dflash_train.data import BatchStream, Sample, collate, from_records, generate, keep_trainable
from dflash_train.events import EventLog, log
from dflash_train.export import read_dir
from dflash_train.jsonl import DataError, too_short
from dflash_train.loss import LossSpec, anchors_for, forward_loss
from dflash_train.mask import CompileFlags, compile_stats, flex_block_mask, forbid_flex_fallback
from dflash_train.model import Drafter, DrafterConfig
from dflash_train.optim import make_optimizer
from dflash_train.pipeline import Replica, amp_context, sync
from dflash_train.presets import gamma_for_block
from dflash_train.target import (
    Target,
    drafter_config,
    embed_and_head,
    load_config,
    load_pretrained,
    load_tokenizer,
    random_qwen3,
    replicate,
    token_text,
)


@dataclass
class Built:
    targets: list[Target]
    replicas: list[Replica]
    cfg: DrafterConfig
    stream: BatchStream
    spec: LossSpec
    amp: torch.dtype | None
    start_step: int


QWEN3_MASK_ID = 151669  # the released Qwen3 drafters' and serving configs' <|MASK|> slot


def default_mask_id(model_type: str, vocab: int, tokenizer_mask: int | None) -> tuple[int, str]:
    """The mask id when none is given, and where it came from (for the log)."""
    if isinstance(tokenizer_mask, int):
        return tokenizer_mask, "the tokenizer's mask token"
    if model_type.startswith("qwen3") and vocab > QWEN3_MASK_ID:
        return QWEN3_MASK_ID, "Qwen3's mask id, as released DFlash drafters use"
    # No convention known: an id a tokenizer rarely emits (data holding it is refused).
    return vocab - 1, "no mask token known for this model; the last vocabulary id"


def _mask_id(s: Settings, tokenizer: Any, model_type: str, vocab: int) -> int:
    """From config and tokenizer only, before any weight is loaded; an id outside the
    embedding (no spare row) is refused here, not after the model loaded."""
    if s.preset.mask_token_id is not None:
        mask_id = s.preset.mask_token_id
    else:
        tok_id = getattr(tokenizer, "mask_token_id", None) if tokenizer is not None else None
        mask_id, why = default_mask_id(model_type, vocab, tok_id)
        log(f"dflash-train: mask token id {mask_id} ({why}; --mask-token-id sets it)")
    if not 0 <= mask_id < vocab:
        raise DataError(
            f"mask token id {mask_id} is outside the target's embedding of {vocab} rows "
            "(no spare row); pass --mask-token-id with an id inside it"
        )
    return mask_id


def _target_meta(s: Settings) -> tuple[Any, str, int]:
    """Tokenizer, model type and vocabulary size: config and tokenizer files only."""
    if s.target_model is None:
        assert s.preset.target_config is not None
        return None, "qwen3", int(s.preset.target_config["vocab_size"])
    tokenizer = load_tokenizer(s.target_model)
    cfg = load_config(s.target_model)
    text = getattr(cfg, "text_config", None) or cfg
    return tokenizer, str(getattr(cfg, "model_type", "") or ""), int(text.vocab_size)


def _load_target(s: Settings, dtype: torch.dtype) -> torch.nn.Module:
    if s.target_model is not None:
        return load_pretrained(s.target_model, dtype)
    assert s.preset.target_config is not None
    return random_qwen3(s.preset.target_config, s.preset.seed)


def _init_drafter(s: Settings, replicas: list[Replica]) -> None:
    """Warm start: the directory's shapes were checked before torch; strict load here."""
    if s.init_drafter is None:
        return
    _config, weights = read_dir(s.init_drafter)
    for rep in replicas:
        rep.model.load_state_dict(weights, strict=True)
    log(f"dflash-train: drafter initialised from {s.init_drafter}")


def _samples(s: Settings, target: Target, tokenizer: Any, mask_id: int) -> list[Sample]:
    p = s.preset
    if s.data is not None:
        samples = from_records(s.data, tokenizer, p.seq_len)
        hits = sum(1 for x in samples if mask_id in x.ids)
        if hits:  # the drafter would read a real token as "to be predicted"
            raise DataError(
                f"{s.data_path}: {hits} sample(s) contain the mask token id {mask_id}; "
                "pass --mask-token-id with an id the data never uses"
            )
    else:
        t0 = time.perf_counter()
        prompt = min(p.gen_prompt_len, p.seq_len // 2)  # a --seq-len override keeps a response
        samples = generate(target.model, p.gen_samples, prompt, p.seq_len, mask_id, p.seed)
        log(
            f"dflash-train: generated {len(samples)} samples of {p.seq_len} tokens with the "
            f"target (greedy) in {time.perf_counter() - t0:.1f} s"
        )
    kept = keep_trainable(samples, p.block_size)
    if not kept:  # text is only counted once tokenized; token ids were checked before torch
        if s.data is None:
            raise DataError(
                f"no generated sample has 2 blocks ({2 * p.block_size} tokens) of supervised "
                "tokens; raise --seq-len or lower --block-size"
            )
        raise DataError(too_short(s.data_path, p.block_size, len(s.data), " once tokenized"))
    return kept


def _replicas(s: Settings, cfg: DrafterConfig, model: torch.nn.Module) -> list[Replica]:
    """Identical drafters (one seed) on every drafter device, each with its own AdamW."""
    embed, head = embed_and_head(model)
    torch.manual_seed(s.preset.seed + 1)
    base = Drafter(cfg, embed, head)
    base.grad_checkpoint = s.preset.grad_checkpoint
    out = []
    for dev in s.drafter_devices():
        m = copy.deepcopy(base).to(dev)
        out.append(
            Replica(
                m,
                make_optimizer(m.trainable(), s.preset.lr, s.preset.weight_decay),
                torch.device(dev),
            )
        )
    return out


def _resume(s: Settings, cfg: DrafterConfig, replicas: list[Replica], events: EventLog) -> int:
    path = ckpt.resolve_resume(s.resume, s.out_dir)
    if path is None:
        return 0
    state = ckpt.load(path)
    if not DrafterConfig.from_json(state["drafter_config"]).same_shape(cfg):
        raise ValueError(f"--resume {path}: its drafter config differs from this run's")
    step = 0
    for rep in replicas:
        step = ckpt.restore(state, rep.model, rep.optimizer)
    log(f"dflash-train: resumed from {path} at step {step}")
    events.emit("checkpoint", action="resumed", path=str(path), step=step)
    changed = ckpt.schedule_changes(state.get("schedule"), ckpt.schedule_of(s.preset))
    if changed:  # allowed (e.g. a longer run), but the learning-rate curve is not the saved one
        msg = f"the schedule differs from the checkpoint's ({', '.join(changed)})"
        log(f"dflash-train: warning: {msg}; the learning rate follows this run's")
        events.emit("warning", what="resume schedule differs", message=msg)
    return step


def build(s: Settings, events: EventLog) -> Built:
    cuda = s.device == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    t0 = time.perf_counter()
    tokenizer, model_type, vocab = _target_meta(s)
    mask_id = _mask_id(s, tokenizer, model_type, vocab)
    model = _load_target(s, dtype)
    p = s.preset
    cfg = drafter_config(
        model, p.drafter_layers, p.block_size, mask_id, token_text(tokenizer, mask_id)
    )
    targets = replicate(model, s.target_devices(), dtype, cfg.target_layer_ids)
    replicas = _replicas(s, cfg, targets[0].model)
    _init_drafter(s, replicas)
    n_target = sum(x.numel() for x in model.parameters())
    n_drafter = sum(x.numel() for x in replicas[0].params())
    log(
        f"dflash-train: target {n_target / 1e6:.1f}M params (layers tapped "
        f"{list(cfg.target_layer_ids)}), drafter {n_drafter / 1e6:.2f}M params x{len(replicas)}"
    )
    events.emit(
        "model_loaded",
        target=str(s.target_model or f"random:{p.name}"),
        target_params=n_target,
        drafter_params=n_drafter,
        target_layer_ids=list(cfg.target_layer_ids),
        mask_token_id=mask_id,
        target_devices=s.target_devices(),
        drafter_devices=s.drafter_devices(),
        seconds=round(time.perf_counter() - t0, 2),
    )
    samples = _samples(s, targets[0], tokenizer, mask_id)
    stream = BatchStream(samples, p.batch_size, p.bucket, p.seq_len, p.seed)
    if p.eval_batches > 0:
        held = len(stream.held_out)
        log(
            f"dflash-train: eval batch: {held} held-out samples"
            if held
            else "dflash-train: eval batch: a training batch (too few samples to hold one out)"
        )
    spec = LossSpec(
        p.block_size,
        p.num_anchors,
        p.loss_gamma or gamma_for_block(p.block_size),
        mask_id,
        s.attention,
        p.loss_chunk_blocks,
    )
    start = _resume(s, cfg, replicas, events)
    return Built(targets, replicas, cfg, stream, spec, torch.bfloat16 if cuda else None, start)


def warm(b: Built, events: EventLog) -> None:
    """Compile and run forward+backward for every (drafter device x shape) in this thread."""
    flex = b.spec.attention == "flex"
    if flex:
        forbid_flex_fallback()
        _probe_block_mask(b, events)
    t0 = time.perf_counter()
    seen: set[str] = set()
    shapes = b.stream.shapes
    first = True
    for rep in b.replicas:
        key = str(rep.device)
        if key in seen:
            continue  # compiled code is per device, not per replica
        seen.add(key)
        for bsz, length in shapes:
            _warm_one(b, rep, bsz, length)
            if first:
                first = False
                events.emit(
                    "compiled",
                    attention=b.spec.attention,
                    device=key,
                    shape=[bsz, length],
                    seconds=round(time.perf_counter() - t0, 2),
                    **compile_stats(),
                )
                log(
                    f"dflash-train: compiled ({b.spec.attention}) on {key} in "
                    f"{time.perf_counter() - t0:.1f} s"
                )
    stats = compile_stats()
    log(
        f"dflash-train: warmed {len(seen)} device(s) x {len(shapes)} shape(s) {shapes} in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    events.emit(
        "warmed",
        devices=sorted(seen),
        shapes=[list(x) for x in shapes],
        seconds=round(time.perf_counter() - t0, 2),
        **stats,
    )


def _probe_block_mask(b: Built, events: EventLog) -> None:
    """Compile create_block_mask once; if Inductor cannot build it, use the eager one."""
    rep = b.replicas[0]
    length = min(b.stream.buckets)
    n = anchors_for(b.spec.num_anchors, length)
    anchors = torch.zeros(b.stream.batch_size, n, dtype=torch.long, device=rep.device)
    keep = torch.ones_like(anchors, dtype=torch.bool)
    t0 = time.perf_counter()
    log("dflash-train: compiling create_block_mask")
    try:
        flex_block_mask(anchors, keep, length, b.spec.block, compiled=True)
        sync(rep.device)
        log(f"dflash-train: create_block_mask compiled in {time.perf_counter() - t0:.1f} s")
    except Exception as exc:  # an Inductor build error: eager mask creation still works
        CompileFlags.block_mask = False
        msg = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        log(f"dflash-train: warning: compiled create_block_mask failed ({msg}); using eager")
        events.emit("warning", what="create_block_mask compile failed; eager", message=msg)


def _warm_one(b: Built, rep: Replica, bsz: int, length: int) -> None:
    """One forward and backward; each phase logged with its time, so a slow compile shows."""
    t0 = time.perf_counter()
    where = f"{rep.device} shape ({bsz}, {length})"
    items = b.stream.buckets[length][:bsz]
    batch = collate((items * bsz)[:bsz], length)
    feats = b.targets[0].features(batch.input_ids)
    compiles = " (compiles flex_attention)" if b.spec.attention == "flex" else ""
    log(f"dflash-train: warm {where}: forward{compiles}")
    with amp_context(rep.device, b.amp):
        loss, _ = forward_loss(
            rep.model,
            batch.input_ids.to(rep.device),
            batch.loss_mask.to(rep.device),
            feats.to(rep.device),
            b.spec,
        )
    sync(rep.device)
    log(f"dflash-train: warm {where}: backward after {time.perf_counter() - t0:.1f} s")
    loss.backward()
    sync(rep.device)
    rep.model.zero_grad(set_to_none=True)
    log(f"dflash-train: warm {where}: done in {time.perf_counter() - t0:.1f} s")


def evaluate(b: Built, seed: int) -> dict[str, float]:
    """Loss on one fixed batch with fixed anchors (the same before and after training).

    Runs with grad enabled, forward only, so it hits the graphs compiled for training instead
    of compiling a no_grad variant.
    """
    rep = b.replicas[0]
    batch = b.stream.first()
    feats = b.targets[0].features(batch.input_ids).to(rep.device)
    gen = torch.Generator().manual_seed(seed)
    with amp_context(rep.device, b.amp):
        loss, m = forward_loss(
            rep.model,
            batch.input_ids.to(rep.device),
            batch.loss_mask.to(rep.device),
            feats,
            b.spec,
            gen,
        )
    return {
        "loss": float(loss.detach()),
        "acc": float(m["acc"]),
        "accept_len": float(m["accept_len"]),
    }
