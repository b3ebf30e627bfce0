"""The exported config.json carries every key SGLang and vLLM (newer and older releases) read,
and both vLLM routes to the target's layers agree (tests/loader_keys.py; the key lists and
their sources are in tests/fixtures/dflash_loader_keys.toml)."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")

from loader_keys import loaders, missing, vllm_aux_layers

from dflash_train.export import config_from_hf, hf_config
from dflash_train.model import DrafterConfig
from dflash_train.serving import check_config

CFG = DrafterConfig(
    hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4, num_kv_heads=2,
    head_dim=16, vocab_size=256, target_layer_ids=(1, 3), block_size=4, mask_token_id=255,
    num_target_layers=6,
)  # fmt: skip


def test_every_loader_finds_every_key_it_reads() -> None:
    assert set(loaders()) == {"sglang", "vllm", "vllm-old"}
    assert missing(hf_config(CFG)) == {"sglang": [], "vllm": [], "vllm-old": []}


def test_old_and_new_vllm_tap_the_same_layers_as_dflash_names() -> None:
    cfg = hf_config(CFG)
    assert vllm_aux_layers(cfg, old=True) == [2, 4]
    without = {k: v for k, v in cfg.items() if k != "eagle_aux_hidden_state_layer_ids"}
    # What we export for older vLLM is what newer vLLM reads from DFlash's own ids alone.
    assert cfg["eagle_aux_hidden_state_layer_ids"] == vllm_aux_layers(without, old=False)
    assert vllm_aux_layers(without, old=False) == [2, 4]  # the newer fallback: the same layers
    assert vllm_aux_layers(without, old=True) is None  # what older releases met before
    assert missing(without)["vllm-old"] == ["eagle_aux_hidden_state_layer_ids"]


def test_mask_token_text_is_exported_and_read_back() -> None:
    cfg = hf_config(CFG)
    assert cfg["dflash_config"]["mask_token"] == "<|MASK|>"  # SGLang's own default
    named = DrafterConfig(**{**CFG.__dict__, "mask_token": "<|mask|>"})
    out = hf_config(named)
    assert out["dflash_config"]["mask_token"] == "<|mask|>"
    assert config_from_hf(out).mask_token == "<|mask|>"


@pytest.mark.parametrize(
    ("drop", "why"),
    [
        (("dflash_config", "mask_token"), "mask_token"),
        ((None, "eagle_aux_hidden_state_layer_ids"), "eagle_aux_hidden_state_layer_ids"),
    ],
)
def test_the_export_check_refuses_a_config_without_them(
    drop: tuple[str | None, str], why: str
) -> None:
    cfg = copy.deepcopy(hf_config(CFG))
    table, key = drop
    del (cfg[table] if table else cfg)[key]
    with pytest.raises(ValueError, match=why):
        check_config(cfg)
    check_config(hf_config(CFG))  # the whole one passes
