"""Drafters people can serve: export -> upstream DFlash, chat data, llama3 RoPE,
warm start, determinism. All offline: small targets and a chat tokenizer are built here
(tests/hf_models.py); upstream is PyPI's ``dflash``, run from a neutral folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_models
import loader_keys

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "upstream_check.py"
WORKERS = ["--device", "cpu", "--target-workers", "1", "--drafter-workers", "1"]
FEW = ["--gen-samples", "24"]  # generation dominates the tiny preset's time on a busy CPU
EVAL = re.compile(r"^eval (before|after): loss=(\S+) acc=(\S+) al=(\S+)$", re.M)
STEP = re.compile(r"^step=(\d+) loss=(\S+) acc=(\S+)", re.M)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFLASH_")}
    env.pop("PYTHONPATH", None)  # the repo's dflash/ would shadow upstream's dflash
    return {**env, "PYTHONUNBUFFERED": "1"}


def train(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "dflash_train.train", "--preset", "tiny", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300, cwd=cwd)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def upstream(export: Path, target: str, cwd: Path) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, str(CHECK), str(export), target],
        capture_output=True, text=True, env=_env(), timeout=300, cwd=cwd,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def evals(res: subprocess.CompletedProcess[str]) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in EVAL.finditer(res.stdout)}


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The tiny preset trained 8 steps with ``--export-dir``; (dir, export, stdout)."""
    d = tmp_path_factory.mktemp("tiny")
    res = train(d, *WORKERS, *FEW, "--steps", "8", "--out-dir", "run", "--export-dir", "export")
    return d, d / "export", res.stdout


@pytest.mark.slow
def test_tiny_export_loads_strictly_in_upstream_and_decodes_losslessly(
    tiny_export: tuple[Path, Path, str],
) -> None:
    d, export, stdout = tiny_export
    assert "dflash-train: exported the drafter to export" in stdout
    cfg = json.loads((export / "config.json").read_text())
    assert cfg["architectures"] == ["DFlashDraftModel"]
    assert cfg["num_target_layers"] == 6 and cfg["block_size"] == 4
    assert cfg["dflash_config"] == {
        "mask_token": "<|MASK|>", "mask_token_id": 255, "target_layer_ids": [1, 3],
        "block_size": 4, "num_target_layers": 6,
    }  # fmt: skip
    # SGLang, vLLM and vLLM before its DFlash fallback each find every key they read
    assert loader_keys.missing(cfg) == {"sglang": [], "vllm": [], "vllm-old": []}
    assert cfg["eagle_aux_hidden_state_layer_ids"] == [2, 4]
    assert cfg["rope_parameters"]["rope_type"] == "default"
    got = upstream(export, "tiny", d)
    assert (got["missing"], got["unexpected"], got["mismatched"]) == ([], [], [])
    assert got["max_abs_diff"] < 1e-5, got
    assert got["lossless"] and got["spec_len"] == got["ref_len"], got


@pytest.mark.slow
def test_export_command_and_warm_start_from_the_export(
    tiny_export: tuple[Path, Path, str],
) -> None:
    """``export`` of the same checkpoint writes the same tensors; ``--init-drafter`` from the
    export starts where the first run ended: its eval before = the first run's eval after."""
    from safetensors.torch import load_file

    d, export, stdout = tiny_export
    again = d / "again"
    ckpt = d / "run" / "checkpoints" / "step_00000008.pt"
    res = subprocess.run(
        [sys.executable, "-m", "dflash_train.train", "export", str(ckpt), str(again)],
        capture_output=True, text=True, env=_env(), timeout=120, cwd=d,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    a, b = load_file(str(export / "model.safetensors")), load_file(str(again / "model.safetensors"))
    assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)
    warm = train(d, *WORKERS, *FEW, "--steps", "1", "--out-dir", "run2", "--init-drafter", "export")
    assert "drafter initialised from export" in warm.stdout
    first = evals(subprocess.CompletedProcess([], 0, stdout, ""))
    assert evals(warm)["before"] == pytest.approx(first["after"], abs=1e-4)


@pytest.mark.slow
def test_chat_data_supervises_assistant_tokens_only_and_trains(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from dflash_train.chat import render

    model = hf_models.save_model(tmp_path / "qwen3")
    tok = AutoTokenizer.from_pretrained(model)
    rec = hf_models.chat_record(5)
    chat = tuple((m["role"], m["content"]) for m in rec["messages"])
    ids, mask = render(tok, chat, "x")
    tokens = tok.convert_ids_to_tokens(ids)
    # Token by token: supervised exactly from the first word of each reply up to and
    # including its <|im_end|>; headers, system and user turns carry no loss.
    expected, role, after_header = [], None, False
    for i, t in enumerate(tokens):
        if t == "<|im_start|>":
            role, after_header = tokens[i + 1], False
            expected.append(0)
            continue
        if not after_header and t == role:
            after_header = True
            expected.append(0)
            continue
        expected.append(int(role == "assistant"))
    assert mask == expected
    replies = [m["content"].split() for m in rec["messages"] if m["role"] == "assistant"]
    supervised = [t for t, m in zip(tokens, mask, strict=True) if m]
    assert supervised == replies[0] + ["<|im_end|>"] + replies[1] + ["<|im_end|>"]
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps(hf_models.chat_record(k)) + "\n" for k in range(16)))
    res = train(tmp_path, "--target-model", str(model), "--data", str(data),
                "--mask-token-id", "3", *WORKERS, "--steps", "3", "--out-dir", "run",
                "--export-dir", "export")  # fmt: skip
    assert len(STEP.findall(res.stdout)) == 3
    exported = json.loads((tmp_path / "export" / "config.json").read_text())
    assert exported["dflash_config"]["mask_token"] == tok.convert_ids_to_tokens(3) == "<|mask|>"
    got = upstream(tmp_path / "export", str(model), tmp_path)
    assert (got["missing"], got["unexpected"], got["mismatched"]) == ([], [], [])
    assert got["max_abs_diff"] < 1e-5 and got["lossless"], got


@pytest.mark.slow
def test_llama3_rope_target_trains_exports_and_rotates_as_transformers(tmp_path: Path) -> None:
    import torch
    from transformers import AutoConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from dflash_train.export import config_from_hf
    from dflash_train.model import rope, rotary_embedding

    model = hf_models.save_model(tmp_path / "llama", "llama", rope_parameters=hf_models.LLAMA3_ROPE)
    res = train(tmp_path, "--target-model", str(model), "--gen-samples", "12",
                "--mask-token-id", "3", *WORKERS, "--steps", "2", "--out-dir", "run",
                "--export-dir", "export")  # fmt: skip
    assert len(STEP.findall(res.stdout)) == 2
    cfg = json.loads((tmp_path / "export" / "config.json").read_text())
    assert cfg["rope_parameters"] == hf_models.LLAMA3_ROPE
    pos = torch.arange(0, 400, 7)[None]
    ref_cos, ref_sin = LlamaRotaryEmbedding(AutoConfig.from_pretrained(model))(
        torch.zeros(1, dtype=torch.float32), pos
    )
    cos, sin = rope(rotary_embedding(config_from_hf(cfg)), pos)
    assert torch.allclose(cos, ref_cos, atol=1e-6) and torch.allclose(sin, ref_sin, atol=1e-6)
    plain = rope(rotary_embedding(config_from_hf({**cfg, "rope_parameters": None,
                                                   "rope_scaling": None})), pos)  # fmt: skip
    assert not torch.allclose(plain[0], ref_cos, atol=1e-3)  # the scaling matters here
    got = upstream(tmp_path / "export", str(model), tmp_path)
    assert got["rope_type"] == "llama3"
    assert (got["missing"], got["unexpected"], got["mismatched"]) == ([], [], [])
    assert got["max_abs_diff"] < 1e-5 and got["lossless"], got


@pytest.mark.slow
def test_same_seed_same_losses_with_5_target_and_3_drafter_workers(tmp_path: Path) -> None:
    runs = [
        train(tmp_path, "--device", "cpu", *FEW, "--steps", "6", "--out-dir", f"r{k}")
        for k in range(2)
    ]
    losses = [STEP.findall(r.stdout) for r in runs]
    assert len(losses[0]) == 6 and losses[0] == losses[1]
    assert evals(runs[0]) == evals(runs[1])
    assert "global batch 12 sequences a step (4 x 3 replicas x 1 accumulated)" in runs[0].stdout


@pytest.mark.slow
def test_regen_rewrites_assistant_turns_batched_and_resumes(tmp_path: Path) -> None:
    model = hf_models.save_model(tmp_path / "qwen3")
    data = tmp_path / "in.jsonl"
    recs = [hf_models.chat_record(k, turns=1 + k % 2) for k in range(5)]
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "out.jsonl"
    args = ["regen", "--target-model", str(model), "--data", str(data), "--out", str(out),
            "--max-new-tokens", "6", "--batch-size", "2", "--device", "cpu"]  # fmt: skip
    cmd = [sys.executable, "-m", "dflash_train.train", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    full = out.read_text()
    lines = [json.loads(ln) for ln in full.splitlines()]
    assert len(lines) == 5
    for rec, new in zip(recs, lines, strict=True):
        old, msgs = rec["messages"], new["messages"]
        assert [m["role"] for m in msgs] == [m["role"] for m in old]
        for a, b in zip(old, msgs, strict=True):  # only assistant turns change (<= 6 words)
            if a["role"] == "assistant":
                assert b["content"] != a["content"] and len(b["content"].split()) <= 6
            else:
                assert b == a
    # Cut after two records and half of the third (a killed run): the rerun completes it.
    keep = full.splitlines(keepends=True)
    out.write_text("".join(keep[:2]) + keep[2][:10])
    res = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "records 2..5" in res.stdout
    assert out.read_text() == full
