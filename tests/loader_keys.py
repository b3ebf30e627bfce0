"""Read a drafter's config.json as each DFlash server does, through the key lists in
fixtures/dflash_loader_keys.toml (each list cites the loader source it was read from)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dflash_loader_keys.toml"


def loaders() -> dict[str, list[str]]:
    doc = tomllib.loads(FIXTURE.read_text(encoding="utf-8"))
    return {name: list(table["keys"]) for name, table in doc.items()}


def lookup(config: dict[str, Any], path: str) -> Any:
    """The first present of ``a|b`` (dotted paths into nested tables), else None."""
    for alternative in path.split("|"):
        node: Any = config
        for part in alternative.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def missing(config: dict[str, Any]) -> dict[str, list[str]]:
    """Per loader, the keys it reads that ``config`` lacks (empty lists: every loader is fed)."""
    return {
        name: [k for k in keys if lookup(config, k) is None] for name, keys in loaders().items()
    }


def vllm_aux_layers(config: dict[str, Any], old: bool) -> list[int] | None:
    """The target layers vLLM taps: the EAGLE-3 key, else (newer releases only) DFlash's ids
    each plus one (vLLM captures a layer's input, DFlash names the layer whose output it takes)."""
    ids = config.get("eagle_aux_hidden_state_layer_ids")
    if ids or old:
        return list(ids) if ids else None
    dflash = config.get("dflash_config") or {}
    return [i + 1 for i in dflash.get("target_layer_ids") or []] or None
