"""Command line of ``dflash-train`` and the checks that need no torch (stdlib only).

Everything a user can get wrong without a GPU (flags, paths, data lines, topology) is checked
here, before torch is imported, and reported as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from dflash_train.drafter_dir import (
    build_target_layer_ids,
    check_empty_out,
    check_init_drafter,
    target_dims,
)
from dflash_train.jsonl import DataError, Record, check_trainable, check_vocab, read_jsonl
from dflash_train.presets import PRESETS, Preset
from dflash_train.ranks import (
    DistFlags,
    World,
    add_dist_flags,
    dist_flags,
    shift_gpus,
    world_from_env,
)
from dflash_train.topology import Topology, TopologyError, parse_indices
from dflash_train.usage import (
    UsageError,
    check_paths,
    check_target_model,
    has_chat_template,
    model_config,
    vocab_size,
)


@dataclass(frozen=True)
class Fault:
    """Test-only fault injection: worker ``role`` number ``index`` raises at its ``step``."""

    role: str
    index: int
    step: int
    rank: int | None = None  # under torchrun: only this rank (None: every rank)


# ``weights``: replica N's weights are nudged at that step (a cross-rank checksum mismatch).
_FAULT = re.compile(r"^(target|drafter|loader|weights):(\d+):(?:step:)?(\d+)(?::rank:(\d+))?$")


def parse_fault(spec: str | None) -> Fault | None:
    """``drafter:1:step:3`` (or ``drafter:1:3``, ``drafter:1:step:3:rank:1``) -> Fault."""
    if not spec:
        return None
    m = _FAULT.match(spec.strip())
    if m is None:
        raise UsageError(
            f"fault {spec!r} must look like drafter:1:step:3, target:0:step:2 or "
            "drafter:0:step:3:rank:1"
        )
    rank = int(m.group(4)) if m.group(4) is not None else None
    return Fault(m.group(1), int(m.group(2)), int(m.group(3)), rank)


@dataclass(frozen=True)
class Settings:
    preset: Preset
    target_model: Path | None
    data: list[Record] | None
    data_path: Path | None
    topology: Topology
    device: str  # "cuda", "cpu", or "auto" until torch says whether CUDA is there
    attention: str  # "flex" or "dense" ("auto" while the device is)
    out_dir: Path
    events: Path | None
    resume: str | None
    fault: Fault | None
    queue_size: int
    stall_timeout: float
    threads: int | None
    target_workers: int = 0  # 0: one per listed GPU
    drafter_workers: int = 0
    gpus_given: bool = False  # --target-gpus/--drafter-gpus on the command line
    export_dir: Path | None = None  # a Hugging Face drafter directory written at the end
    init_drafter: Path | None = None  # warm start from an exported or released drafter
    world: World = field(
        default_factory=World
    )  # torchrun's rank and world size (one process: rank 0 of 1)
    dist: DistFlags = field(default_factory=DistFlags)

    def on(self, device: str) -> Settings:
        """The settings once the device is known: flex attention on CUDA, dense on the CPU."""
        attention = self.attention
        if attention == "auto":
            attention = "flex" if device == "cuda" else "dense"
        return replace(self, device=device, attention=attention)

    def target_devices(self) -> list[str]:
        return self._spread(self.topology.target, self.target_workers)

    def drafter_devices(self) -> list[str]:
        return self._spread(self.topology.drafter, self.drafter_workers)

    def _spread(self, gpus: tuple[int, ...], workers: int) -> list[str]:
        """One worker per GPU by default; more workers go round-robin over the GPUs."""
        n = workers or len(gpus)
        return [self._dev(gpus[k % len(gpus)]) for k in range(n)]

    def _dev(self, index: int) -> str:
        return "cpu" if self.device == "cpu" else f"cuda:{index}"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dflash-train",
        description="Train a DFlash block-diffusion drafter against a frozen target model.",
    )
    p.add_argument("--preset", choices=sorted(PRESETS), help="tiny (default), medium, recipe")
    p.add_argument("--target-model", type=Path, help="local Hugging Face causal LM directory")
    p.add_argument("--data", type=Path, help="JSONL of token ids or text (see dflash/jsonl.py)")
    p.add_argument("--target-gpus", help="GPUs running the frozen target (default 0-4)")
    p.add_argument("--drafter-gpus", help="GPUs training the drafter (default 5-7)")
    p.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="cpu maps every worker to the CPU (GPU lists then only give counts); auto: CUDA "
        "if torch sees it, else the CPU when no GPU list was given",
    )
    p.add_argument(
        "--allow-shared-gpus",
        action="store_true",
        help="allow one GPU to serve both roles (e.g. all 8 roles on GPU 0)",
    )
    p.add_argument(
        "--attention",
        choices=["auto", "flex", "dense"],
        default="auto",
        help="auto: compiled flex_attention on GPU, dense mask on CPU",
    )
    g = p.add_argument_group("training (defaults from the preset)")
    g.add_argument("--steps", type=int)
    g.add_argument("--batch-size", type=int, help="sequences per drafter worker per step")
    g.add_argument(
        "--grad-accum", type=int, help="micro-batches per drafter worker per optimiser step"
    )
    g.add_argument("--seq-len", type=int)
    g.add_argument("--block-size", type=int)
    g.add_argument("--num-anchors", type=int)
    g.add_argument("--drafter-layers", type=int)
    g.add_argument("--lr", type=float)
    g.add_argument("--warmup-ratio", type=float)
    g.add_argument("--grad-clip", type=float)
    g.add_argument("--loss-gamma", type=float)
    g.add_argument("--mask-token-id", type=int)
    g.add_argument("--gen-samples", type=int, help="samples generated by the target without --data")
    g.add_argument("--grad-checkpoint", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--loss-chunk-blocks", type=int)
    g.add_argument("--log-every", type=int)
    g.add_argument("--checkpoint-every", type=int, help="0: only at the end")
    g.add_argument("--eval-batches", type=int)
    g.add_argument("--seed", type=int)
    o = p.add_argument_group("run")
    o.add_argument("--out-dir", type=Path, help="checkpoints and default events ($DFLASH_RUN_DIR)")
    o.add_argument(
        "--events", type=_optional_path, help="event stream path (default $DFLASH_EVENTS)"
    )
    o.add_argument("--resume", help="checkpoint file, or 'auto' for the latest in --out-dir")
    o.add_argument("--queue-size", type=int, default=4, help="bound of each queue")
    o.add_argument(
        "--stall-timeout",
        type=float,
        default=600.0,
        help="seconds without a step before the run is declared stuck",
    )
    o.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    o.add_argument(
        "--target-workers",
        type=int,
        help="target worker threads, round-robin over --target-gpus (default: one per GPU)",
    )
    o.add_argument(
        "--drafter-workers",
        type=int,
        help="drafter replicas, round-robin over --drafter-gpus (e.g. 3 on one shared GPU)",
    )
    o.add_argument(
        "--export-dir", type=Path, help="write the drafter as a Hugging Face dir at the end"
    )
    o.add_argument(
        "--init-drafter", type=Path, help="warm start from an exported/released drafter dir"
    )
    o.add_argument("--fault", help=argparse.SUPPRESS)  # test-only, also $DFLASH_FAULT
    add_dist_flags(p)
    return p


def _optional_path(value: str) -> Path | None:
    return Path(value) if value else None  # --events "": as if not given ($DFLASH_EVENTS)


def _positive(name: str, value: int | float | None, zero_ok: bool = False) -> None:
    if value is not None and (value < 0 or (value == 0 and not zero_ok)):
        raise UsageError(f"--{name} must be {'non-negative' if zero_ok else 'positive'}")


def _preset(ns: argparse.Namespace) -> Preset:
    name = ns.preset or ("recipe" if ns.target_model else "tiny")
    base = PRESETS[name]
    for key in (
        "steps",
        "batch_size",
        "grad_accum",
        "seq_len",
        "block_size",
        "num_anchors",
        "drafter_layers",
        "lr",
        "log_every",
        "loss_chunk_blocks",
    ):
        _positive(key.replace("_", "-"), getattr(ns, key))
    _positive("checkpoint-every", ns.checkpoint_every, zero_ok=True)
    _positive("eval-batches", ns.eval_batches, zero_ok=True)
    if ns.block_size is not None and ns.block_size < 2:
        raise UsageError("--block-size must be at least 2 (an anchor and one token to predict)")
    preset = base.with_overrides(
        steps=ns.steps,
        batch_size=ns.batch_size,
        grad_accum=ns.grad_accum,
        seq_len=ns.seq_len,
        block_size=ns.block_size,
        num_anchors=ns.num_anchors,
        drafter_layers=ns.drafter_layers,
        lr=ns.lr,
        warmup_ratio=ns.warmup_ratio,
        grad_clip=ns.grad_clip,
        loss_gamma=ns.loss_gamma,
        mask_token_id=ns.mask_token_id,
        gen_samples=ns.gen_samples,
        grad_checkpoint=ns.grad_checkpoint,
        loss_chunk_blocks=ns.loss_chunk_blocks,
        log_every=ns.log_every,
        checkpoint_every=ns.checkpoint_every,
        eval_batches=ns.eval_batches,
        seed=ns.seed,
    )
    if ns.seq_len is not None:  # keep the bucket a divisor-friendly size
        preset = preset.with_overrides(bucket=min(preset.bucket, ns.seq_len))
    if preset.seq_len < 2 * preset.block_size:
        raise UsageError(f"--seq-len {preset.seq_len} is shorter than two blocks")
    return preset


def _topology(ns: argparse.Namespace, env: dict[str, str]) -> Topology:
    target = parse_indices("0-4" if ns.target_gpus is None else ns.target_gpus, "--target-gpus")
    drafter = parse_indices("5-7" if ns.drafter_gpus is None else ns.drafter_gpus, "--drafter-gpus")
    if not drafter:
        raise UsageError("no drafter GPU: --drafter-gpus is empty, the drafter needs at least one")
    if not target:
        raise UsageError("no target GPU: --target-gpus is empty, the target needs at least one")
    shared = ns.allow_shared_gpus or ns.device == "cpu"  # on the CPU every role shares it
    if ns.device != "cpu":  # under torchrun: the process's own GPUs on its host
        target, drafter = shift_gpus(target, drafter, world_from_env(env), ns.rank_gpu_offset)
    try:
        return Topology(target, drafter, allow_shared=shared)
    except TopologyError as exc:
        raise UsageError(f"{exc}; pass --allow-shared-gpus to allow it") from None


def _check_chat(data: list[Record], path: Path, target_model: Path | None) -> None:
    """Chat records need the target tokenizer's chat template (checked in its files)."""
    chats = [r for r in data if r.messages is not None]
    if chats and target_model is not None and not has_chat_template(target_model):
        raise UsageError(
            f"{path} line {chats[0].line}: chat data needs a chat template, and the tokenizer "
            f"of --target-model {target_model} has none"
        )


def _check_init(path: Path, preset: Preset, target_model: Path | None) -> None:
    """``--init-drafter``: shapes from its config and safetensors headers, before torch."""
    cfg = model_config(target_model) if target_model is not None else preset.target_config
    assert cfg is not None  # a preset without a target config needs --target-model
    try:
        layers = int(target_dims(cfg)["layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"--target-model {target_model}: config.json lacks {exc}") from None
    ids = build_target_layer_ids(layers, preset.drafter_layers)
    check_init_drafter(path, cfg, preset.drafter_layers, ids)


def resolve(argv: list[str], environ: dict[str, str] | None = None) -> Settings:
    """Parse and check everything that needs no torch. Raises UsageError or SystemExit.

    Creates nothing: the write checks of the out dir remove what they made.
    """
    env = dict(os.environ if environ is None else environ)
    ns = build_parser().parse_args(argv)
    preset = _preset(ns)
    topology = _topology(ns, env)
    world = world_from_env(env)
    dist = dist_flags(ns)
    target_model = check_target_model(ns.target_model, preset)
    fault = parse_fault(ns.fault or env.get("DFLASH_FAULT"))
    _positive("queue-size", ns.queue_size)
    _positive("stall-timeout", ns.stall_timeout)
    _positive("threads", ns.threads)
    for role, gpus, n in (
        ("target", topology.target, ns.target_workers),
        ("drafter", topology.drafter, ns.drafter_workers),
    ):
        _positive(f"{role}-workers", n)
        if n is not None and n < len(gpus) and ns.device != "cpu":
            raise UsageError(
                f"--{role}-workers {n} leaves some of the {len(gpus)} {role} GPUs idle"
            )
    data = None
    if ns.data is not None:
        try:
            data = read_jsonl(ns.data, have_tokenizer=target_model is not None)
            _check_chat(data, ns.data, target_model)
            vocab = vocab_size(preset, target_model)
            if vocab is not None:
                check_vocab(data, ns.data, vocab)
            check_trainable(data, ns.data, preset.block_size, preset.seq_len)
        except DataError as exc:
            raise UsageError(str(exc)) from None
    if data is None and preset.gen_samples <= 0:
        if preset.target_config is None:
            raise UsageError("--data is needed with --target-model (or --gen-samples N)")
        raise UsageError(f"--gen-samples {preset.gen_samples} generates nothing; give --data")
    if data is None:  # generated: a prompt, then the supervised response (dflash_train.build)
        prompt = min(preset.gen_prompt_len, preset.seq_len // 2)
        response = preset.seq_len - prompt
        if response < 2 * preset.block_size:
            raise UsageError(
                f"--seq-len {preset.seq_len} leaves {response} generated tokens after the "
                f"{prompt}-token prompt, fewer than 2 blocks ({2 * preset.block_size} tokens at "
                f"block {preset.block_size}); raise --seq-len or lower --block-size"
            )
    if ns.attention == "flex" and ns.device == "cpu":
        raise UsageError("--attention flex needs CUDA: flex_attention has no backward on CPU")
    gpus_given = ns.target_gpus is not None or ns.drafter_gpus is not None
    out_dir = ns.out_dir or Path(env.get("DFLASH_RUN_DIR") or "dflash-out")
    if ns.export_dir is not None and world.main:
        check_empty_out(ns.export_dir, "--export-dir")
    if ns.init_drafter is not None:
        _check_init(ns.init_drafter, preset, target_model)
    if world.main:  # rank 0 alone writes (and resumes): its checks, done once, not raced
        check_paths(ns, env, out_dir)  # last: every check before it touches no file
    settings = Settings(
        preset=preset,
        target_model=target_model,
        data=data,
        data_path=ns.data,
        topology=topology,
        device=ns.device,
        attention=ns.attention,
        out_dir=out_dir,
        events=ns.events,
        resume=ns.resume,
        fault=fault,
        queue_size=ns.queue_size,
        stall_timeout=ns.stall_timeout,
        threads=ns.threads,
        target_workers=ns.target_workers or 0,
        drafter_workers=ns.drafter_workers or 0,
        gpus_given=gpus_given,
        export_dir=ns.export_dir,
        init_drafter=ns.init_drafter,
        world=world,
        dist=dist,
    )
    return settings if ns.device == "auto" else settings.on(ns.device)
