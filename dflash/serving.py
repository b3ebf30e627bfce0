"""What an exported drafter must look like to the serving engines (stdlib only).

SGLang and vLLM load a DFlash drafter by weight name, and SGLang silently skips a name it does
not know (a wrong prefix would serve a random drafter with no error), so the export checks
its names against the rules those loaders apply. Read from their public code:

- SGLang ``python/sglang/srt/models/dflash.py`` (``DFlashDraftModel.load_weights``): params
  ``layers.{i}.self_attn.qkv_proj`` (fed by ``q_proj``/``k_proj``/``v_proj`` shards),
  ``self_attn.o_proj``, ``self_attn.q_norm``, ``self_attn.k_norm``, ``mlp.gate_up_proj`` (fed by
  ``gate_proj``/``up_proj``), ``mlp.down_proj``, ``input_layernorm``,
  ``post_attention_layernorm``, and ``fc``, ``hidden_norm``, ``norm``; a ``model.`` prefix is
  tried both ways; an unresolved name is skipped without a word. Its config comes from
  ``python/sglang/srt/speculative/dflash_utils.py`` (``parse_dflash_draft_config``):
  ``dflash_config.num_target_layers`` (else top-level), ``block_size`` (``dflash_config`` or
  top-level), ``dflash_config.target_layer_ids`` (each < num_target_layers),
  ``dflash_config.mask_token`` (the token's text, looked up in the target's tokenizer; absent,
  ``<|MASK|>``) and, in later releases, ``dflash_config.mask_token_id``.
- vLLM ``vllm/model_executor/models/qwen3_dflash.py`` (``DFlashQwen3ForCausalLM.load_weights``):
  every name without ``lm_head`` gets ``model.`` prepended, then the same stacking
  (``.q_proj`` -> ``.qkv_proj`` ...) maps it onto ``DFlashQwen3Model``'s params (the same list
  as SGLang's); ``AutoWeightsLoader`` rejects a name it cannot place, so a name already
  prefixed with ``model.`` fails there. ``dflash_config.mask_token_id`` is read the same way.
  The target's layers to tap come from ``get_eagle3_aux_layers_from_config``
  (``vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py``): ``eagle_aux_hidden_state_layer_ids``,
  else (later releases only) ``dflash_config.target_layer_ids`` each plus one, because vLLM
  captures a layer's input where DFlash names the layer whose output it takes. Earlier releases
  read only the EAGLE-3 key and otherwise tap the model's default three layers, which gives
  ``fc`` the wrong input width.
- z-lab ``dflash/model.py`` (``DFlashDraftModel``, PyPI ``dflash``): the same unprefixed names
  as parameters of a ``Qwen3PreTrainedModel``, loaded by ``from_pretrained``.

So the one spelling all three accept: unprefixed names, q/k/v and gate/up unfused.
"""

from __future__ import annotations


def aux_layer_ids(target_layer_ids: tuple[int, ...] | list[int]) -> list[int]:
    """vLLM's ``eagle_aux_hidden_state_layer_ids`` for DFlash's ``target_layer_ids``."""
    return [i + 1 for i in target_layer_ids]


# Per decoder layer; the stacked (fused) param each feeds in SGLang/vLLM is in the comment.
LAYER_WEIGHTS = (
    "self_attn.q_proj.weight",  # -> qkv_proj shard "q"
    "self_attn.k_proj.weight",  # -> qkv_proj shard "k"
    "self_attn.v_proj.weight",  # -> qkv_proj shard "v"
    "self_attn.o_proj.weight",
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "mlp.gate_proj.weight",  # -> gate_up_proj shard 0
    "mlp.up_proj.weight",  # -> gate_up_proj shard 1
    "mlp.down_proj.weight",
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
)
TOP_WEIGHTS = ("fc.weight", "hidden_norm.weight", "norm.weight")


def consumed_names(num_layers: int) -> set[str]:
    """Every weight name the SGLang and vLLM DFlash loaders place for ``num_layers`` layers."""
    names = set(TOP_WEIGHTS)
    for i in range(num_layers):
        names.update(f"layers.{i}.{w}" for w in LAYER_WEIGHTS)
    return names


def check_names(names: set[str], num_layers: int) -> None:
    """ValueError unless ``names`` is exactly what the loaders consume: no name they would
    skip (SGLang) or reject (vLLM), none of their params left without a weight."""
    want = consumed_names(num_layers)
    extra, missing = sorted(names - want), sorted(want - names)
    if extra or missing:
        raise ValueError(
            f"export weight names do not match the SGLang/vLLM DFlash loaders: "
            f"not consumed {extra[:5]}, missing {missing[:5]}"
        )


def check_config(cfg: dict) -> None:
    """ValueError if the config lacks what SGLang's parse_dflash_draft_config needs."""
    d = cfg.get("dflash_config") or {}
    n = cfg.get("num_target_layers")
    ids = d.get("target_layer_ids")
    if not isinstance(n, int) or n < 1:
        raise ValueError("config.json needs num_target_layers >= 1")
    if not isinstance(d.get("mask_token_id"), int):
        raise ValueError("config.json needs dflash_config.mask_token_id")
    if not ids or any(not isinstance(i, int) or i < 0 or i >= n for i in ids):
        raise ValueError(f"dflash_config.target_layer_ids {ids} must lie in 0..{n - 1}")
    if not isinstance(cfg.get("block_size"), int) or cfg["block_size"] < 2:
        raise ValueError("config.json needs block_size >= 2")
    if not isinstance(d.get("mask_token"), str) or not d["mask_token"]:
        raise ValueError("config.json needs dflash_config.mask_token (the mask token's text)")
    if cfg.get("eagle_aux_hidden_state_layer_ids") != aux_layer_ids(ids):
        raise ValueError("eagle_aux_hidden_state_layer_ids must be each target layer id plus one")
