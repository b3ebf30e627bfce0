"""Checks of drafter directories named on the command line, before torch (stdlib only):
an ``--export-dir``/``OUT_DIR`` that must be empty, and an ``--init-drafter`` whose config and
weight shapes (read from the safetensors headers, no tensor loaded) must fit the target."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from dflash_train.serving import LAYER_WEIGHTS, TOP_WEIGHTS
from dflash_train.usage import UsageError


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The reference rule: n layers spread evenly from layer 1 to layer L-3 (36, 5 -> 1..33)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    span = end - start
    return [round(start + i * span / (num_draft_layers - 1)) for i in range(num_draft_layers)]


def check_empty_out(path: Path, label: str) -> None:
    """The export never mixes with older files: the directory must be new or empty."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{label} {path} exists and is not empty (an export needs a new dir)")


def target_dims(cfg: dict[str, Any]) -> dict[str, int]:
    """hidden, intermediate, heads, kv heads, head_dim, layers of a HF target config."""
    text = cfg.get("text_config")
    c = text if isinstance(text, dict) and "hidden_size" in text else cfg
    heads = int(c["num_attention_heads"])
    return {
        "hidden": int(c["hidden_size"]),
        "inter": int(c["intermediate_size"]),
        "heads": heads,
        "kv": int(c.get("num_key_value_heads") or heads),
        "head_dim": int(c.get("head_dim") or int(c["hidden_size"]) // heads),
        "layers": int(c["num_hidden_layers"]),
    }


def expected_shapes(d: dict[str, int], taps: int, layers: int) -> dict[str, list[int]]:
    h, hd = d["hidden"], d["head_dim"]
    per_layer = {
        "self_attn.q_proj.weight": [d["heads"] * hd, h],
        "self_attn.k_proj.weight": [d["kv"] * hd, h],
        "self_attn.v_proj.weight": [d["kv"] * hd, h],
        "self_attn.o_proj.weight": [h, d["heads"] * hd],
        "self_attn.q_norm.weight": [hd],
        "self_attn.k_norm.weight": [hd],
        "mlp.gate_proj.weight": [d["inter"], h],
        "mlp.up_proj.weight": [d["inter"], h],
        "mlp.down_proj.weight": [h, d["inter"]],
        "input_layernorm.weight": [h],
        "post_attention_layernorm.weight": [h],
    }
    assert set(per_layer) == set(LAYER_WEIGHTS)
    out = dict(zip(TOP_WEIGHTS, ([h, taps * h], [h], [h]), strict=True))
    for i in range(layers):
        out.update({f"layers.{i}.{k}": v for k, v in per_layer.items()})
    return out


def safetensors_shapes(path: Path) -> dict[str, list[int]]:
    """Tensor name -> shape from a safetensors file's JSON header (no tensor read)."""
    with path.open("rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
    return {k: list(v["shape"]) for k, v in header.items() if k != "__metadata__"}


def check_init_drafter(
    path: Path, target_cfg: dict[str, Any], drafter_layers: int, layer_ids: list[int]
) -> None:
    """``--init-drafter``: its layer count, tapped layers and every weight shape fit this run."""
    flag = f"--init-drafter {path}"
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else []
    if not (path / "config.json").is_file() or not files:
        raise UsageError(f"{flag}: not a drafter directory (config.json and *.safetensors)")
    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
        shapes: dict[str, list[int]] = {}
        for f in files:
            shapes.update(safetensors_shapes(f))
    except (OSError, ValueError, struct.error) as exc:
        raise UsageError(f"{flag}: unreadable ({exc})") from None
    n = cfg.get("num_hidden_layers")
    if n != drafter_layers:
        raise UsageError(f"{flag} has {n} layers; this run's drafter has {drafter_layers}")
    ids = (cfg.get("dflash_config") or {}).get("target_layer_ids")
    if ids is not None and list(ids) != list(layer_ids):
        raise UsageError(f"{flag} taps target layers {ids}; this run taps {layer_ids}")
    want = expected_shapes(target_dims(target_cfg), len(layer_ids), drafter_layers)
    for name, shape in want.items():
        got = shapes.get(name)
        if got != shape:
            what = "is missing" if got is None else f"has shape {got}"
            raise UsageError(f"{flag}: {name} {what}; the target needs {shape}")
    extra = sorted(set(shapes) - set(want))
    if extra:
        raise UsageError(f"{flag}: unexpected weights {extra[:3]} (not a DFlash drafter?)")
