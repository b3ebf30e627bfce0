"""Bad input for export, chat data and warm start: one line, exit 2, before any
weight loads (these checks are stdlib: torch is never imported)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dflash_train.serving import check_names, consumed_names

ROOT = Path(__file__).resolve().parents[2]
TINY_TARGET_CFG = {
    "vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 6,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
}  # fmt: skip
# Runs dflash-train and reports whether torch got imported (it must not be, for these).
PROBE = (
    "import sys, runpy\n"
    "sys.argv = ['dflash-train'] + sys.argv[1:]\n"
    "from dflash_train.train import main\n"
    "code = main(sys.argv[1:])\n"
    "print('torch imported' if 'torch' in sys.modules else 'no torch')\n"
    "sys.exit(code)\n"
)


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFLASH_")}
    env.pop("PYTHONPATH", None)
    cmd = [sys.executable, "-c", PROBE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd=tmp)


def one_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    assert "no torch" in res.stdout, "checked before torch (and any weight) was imported"
    errs = [ln for ln in res.stderr.splitlines() if ": error:" in ln]
    assert len(errs) == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    return errs[0]


def model_dir(tmp: Path, chat_template: str | None) -> Path:
    d = tmp / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3", **TINY_TARGET_CFG}))
    tok = {"tokenizer_class": "PreTrainedTokenizerFast"}
    if chat_template is not None:
        tok["chat_template"] = chat_template
    (d / "tokenizer_config.json").write_text(json.dumps(tok))
    return d


def chat_file(tmp: Path, messages: list[dict]) -> Path:
    f = tmp / "chat.jsonl"
    f.write_text(json.dumps({"messages": messages}) + "\n")
    return f


def test_messages_without_an_assistant_turn(tmp_path: Path) -> None:
    model = model_dir(tmp_path, "{{ messages }}")
    data = chat_file(tmp_path, [{"role": "user", "content": "hi"}])
    err = one_error(run(tmp_path, "--target-model", str(model), "--data", str(data),
                        "--device", "cpu"))  # fmt: skip
    assert err == f"dflash-train: error: {data} line 1: messages have no assistant turn " \
        "(nothing to train on)"  # fmt: skip


def test_chat_data_with_a_tokenizer_without_a_chat_template(tmp_path: Path) -> None:
    model = model_dir(tmp_path, None)
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    data = chat_file(tmp_path, msgs)
    err = one_error(run(tmp_path, "--target-model", str(model), "--data", str(data),
                        "--device", "cpu"))  # fmt: skip
    assert "chat data needs a chat template" in err and str(model) in err


@pytest.mark.parametrize("where", ["export", "train"])
def test_an_export_dir_that_exists_and_is_not_empty(tmp_path: Path, where: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    if where == "export":
        ckpt = tmp_path / "step_00000001.pt"
        ckpt.write_bytes(b"not read")
        err = one_error(run(tmp_path, "export", str(ckpt), str(out)))
        assert err == f"dflash-train export: error: OUT_DIR {out} exists and is not empty " \
            "(an export needs a new dir)"  # fmt: skip
    else:
        err = one_error(run(tmp_path, "--device", "cpu", "--export-dir", str(out)))
        assert f"--export-dir {out} exists and is not empty" in err
    assert (out / "keep.txt").read_text() == "x" and len(list(out.iterdir())) == 1


def _safetensors(path: Path, shapes: dict[str, list[int]]) -> None:
    """A header-only safetensors file (the check reads only the header)."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = 4
        for dim in shape:
            n *= dim
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def _drafter(tmp: Path, hidden: int) -> Path:
    from dflash_train.drafter_dir import expected_shapes, target_dims

    d = tmp / "drafter"
    d.mkdir()
    cfg = {**TINY_TARGET_CFG, "hidden_size": hidden, "num_hidden_layers": 2,
           "dflash_config": {"target_layer_ids": [1, 3], "mask_token_id": 255}}  # fmt: skip
    (d / "config.json").write_text(json.dumps(cfg))
    _safetensors(d / "model.safetensors", expected_shapes(target_dims(cfg), 2, 2))
    return d


def test_a_warm_start_drafter_whose_shapes_do_not_fit(tmp_path: Path) -> None:
    bad = _drafter(tmp_path, hidden=32)
    err = one_error(run(tmp_path, "--device", "cpu", "--init-drafter", str(bad)))
    assert err.startswith(f"dflash-train: error: --init-drafter {bad}: fc.weight has shape ")
    assert "the target needs [64, 128]" in err


def test_a_warm_start_drafter_that_fits_passes_the_check(tmp_path: Path) -> None:
    from dflash_train.cli import resolve

    good = _drafter(tmp_path, hidden=64)
    s = resolve(["--device", "cpu", "--init-drafter", str(good), "--out-dir", str(tmp_path)])
    assert s.init_drafter == good


def test_the_served_names_rule() -> None:
    names = consumed_names(2)
    assert len(names) == 3 + 2 * 11 and "layers.1.mlp.up_proj.weight" in names
    check_names(names, 2)
    with pytest.raises(ValueError, match="not consumed"):
        check_names({f"model.{n}" for n in names}, 2)  # vLLM prefixes model. itself
    with pytest.raises(ValueError, match="missing"):
        check_names(names - {"hidden_norm.weight"}, 2)  # SGLang would keep a random one
