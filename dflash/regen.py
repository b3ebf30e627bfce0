"""``dflash-train regen``: regenerate the assistant turns of chat data with the target.

The recipe trains on responses the target itself wrote (SpecForge
``scripts/regenerate_train_data.py``): every assistant turn of a ``{"messages": [...]}`` record
is replaced, in order, by the target's reply to the conversation before it (the earlier
turns already regenerated), rendered with the target's chat template. Greedy by default,
sampled with ``--temperature``; records go through ``generate`` in batches (left-padded).
Output line k belongs to input record k, written and flushed batch by batch, so a run that
stops is resumed by running the same command again: the complete lines are kept (a torn
last line is cut) and generation continues at the next record; each batch's sampling seed
derives from ``--seed`` and its first record, so the records come out the same either way.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dflash_train.jsonl import DataError, Record, read_jsonl
from dflash_train.usage import UsageError, has_chat_template


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dflash-train regen",
        description="Regenerate the assistant turns of chat JSONL with the target model.",
    )
    p.add_argument("--target-model", type=Path, required=True, help="local HF model directory")
    p.add_argument("--data", type=Path, required=True, help='JSONL of {"messages": [...]}')
    p.add_argument("--out", type=Path, required=True, help="output JSONL (resumed if present)")
    p.add_argument("--max-new-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    return p


def check(ns: argparse.Namespace) -> list[Record]:
    """Everything before torch: the model dir and its chat template, the data, the out file."""
    if not (ns.target_model / "config.json").is_file():
        raise UsageError(f"--target-model {ns.target_model} has no config.json")
    if not has_chat_template(ns.target_model):
        raise UsageError(f"--target-model {ns.target_model}: its tokenizer has no chat template")
    if ns.max_new_tokens < 1 or ns.batch_size < 1 or ns.temperature < 0:
        raise UsageError("--max-new-tokens and --batch-size must be positive, --temperature >= 0")
    try:
        records = read_jsonl(ns.data, have_tokenizer=True)
    except DataError as exc:
        raise UsageError(str(exc)) from None
    bad = next((r for r in records if r.messages is None), None)
    if bad is not None:
        raise UsageError(f'{ns.data} line {bad.line}: regen needs {{"messages": [...]}} records')
    if ns.out.is_dir() or not ns.out.parent.is_dir():
        raise UsageError(f"--out {ns.out}: not a file in an existing directory")
    return records


def done_lines(out: Path) -> int:
    """Complete lines already written; a torn last line (killed mid-write) is cut off."""
    if not out.exists():
        return 0
    data = out.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with out.open("r+b") as fh:
            fh.truncate(keep)
    return data[:keep].count(b"\n")


def _generate(
    model: Any, tok: Any, convs: list[list[dict[str, str]]], ns: argparse.Namespace
) -> list[str]:
    import torch

    prompts = [
        tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs
    ]
    tok.padding_side = "left"
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    dev = next(model.parameters()).device
    sample = ns.temperature > 0
    out = model.generate(
        input_ids=enc["input_ids"].to(dev),
        attention_mask=enc["attention_mask"].to(dev),
        max_new_tokens=ns.max_new_tokens,
        do_sample=sample,
        temperature=ns.temperature if sample else None,
        top_p=ns.top_p if sample else None,
        top_k=None,
        pad_token_id=tok.pad_token_id,
    )
    new = out[:, enc["input_ids"].shape[1] :]
    with torch.no_grad():
        return [tok.decode(row, skip_special_tokens=True) for row in new.cpu().tolist()]


def regen_batch(
    model: Any, tok: Any, batch: list[Record], ns: argparse.Namespace
) -> list[list[dict[str, str]]]:
    """The batch's chats with every assistant turn rewritten, turn by turn across the batch."""
    chats = [[{"role": r, "content": c} for r, c in rec.messages or ()] for rec in batch]
    turns = [[i for i, m in enumerate(c) if m["role"] == "assistant"] for c in chats]
    for t in range(max(len(x) for x in turns)):
        rows = [k for k, x in enumerate(turns) if t < len(x)]
        replies = _generate(model, tok, [chats[k][: turns[k][t]] for k in rows], ns)
        for k, reply in zip(rows, replies, strict=True):
            chats[k][turns[k][t]]["content"] = reply
    return chats


def run(ns: argparse.Namespace, records: list[Record]) -> int:
    import torch

    from dflash_train.target import load_pretrained, load_tokenizer

    start = done_lines(ns.out)
    if start >= len(records):
        print(f"dflash-train regen: {ns.out} already holds all {len(records)} records")
        return 0
    cuda = ns.device == "cuda" or (ns.device == "auto" and torch.cuda.is_available())
    dtype = torch.bfloat16 if cuda else torch.float32
    model = load_pretrained(ns.target_model, dtype).to("cuda" if cuda else "cpu")
    tok = load_tokenizer(ns.target_model)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    print(f"dflash-train regen: records {start}..{len(records)} of {ns.data}", flush=True)
    with ns.out.open("a", encoding="utf-8") as fh:
        for lo in range(start, len(records), ns.batch_size):
            torch.manual_seed(ns.seed * 1_000_003 + lo)
            batch = records[lo : lo + ns.batch_size]
            for chat in regen_batch(model, tok, batch, ns):
                fh.write(json.dumps({"messages": chat}, ensure_ascii=False) + "\n")
            fh.flush()
            print(f"dflash-train regen: {lo + len(batch)}/{len(records)}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    ns = parser().parse_args(argv)
    try:
        records = check(ns)
    except UsageError as exc:
        print(f"dflash-train regen: error: {exc}", file=sys.stderr)
        return 2
    return run(ns, records)
