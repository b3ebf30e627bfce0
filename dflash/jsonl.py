"""Training data as JSON lines, checked before anything heavy is imported (stdlib only).

One sample per line, blank lines skipped. Accepted shapes:
- ``[12, 7, 99]``: token ids, every token supervised;
- ``{"input_ids": [...], "loss_mask": [0, 1, ...]}`` (loss_mask optional, same length);
- ``{"text": "..."}``: tokenized with the target's tokenizer, every token supervised;
- ``{"prompt": "...", "response": "..."}``: loss on the response only;
- ``{"messages": [{"role": ..., "content": ...}, ...]}``: a chat, rendered with the target
  tokenizer's chat template, loss on the assistant turns only (dflash_train.chat).
Text needs a tokenizer, so it needs ``--target-model``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """Bad training data, with the file and line number in the message."""


@dataclass(frozen=True)
class Record:
    line: int = 0
    ids: tuple[int, ...] | None = None
    mask: tuple[int, ...] | None = None
    text: str | None = None
    prompt: str | None = None
    response: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None  # (role, content)

    @property
    def needs_tokenizer(self) -> bool:
        return self.ids is None


def _ids(value: Any, where: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: {key} must be a non-empty list of token ids")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise DataError(f"{where}: {key} holds {v!r}, not a non-negative token id")
    return tuple(value)


ROLES = ("system", "user", "assistant", "tool")


def _messages(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A chat: role/content objects, with at least one assistant turn to supervise."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: messages must be a non-empty list of role/content objects")
    out = []
    for m in value:
        if (
            not isinstance(m, dict)
            or m.get("role") not in ROLES
            or not isinstance(m.get("content"), str)
        ):
            raise DataError(
                f"{where}: each message needs a role ({'/'.join(ROLES)}) and a string content"
            )
        out.append((m["role"], m["content"]))
    if not any(role == "assistant" for role, _ in out):
        raise DataError(f"{where}: messages have no assistant turn (nothing to train on)")
    return tuple(out)


def _record(obj: Any, where: str, line: int) -> Record:
    if isinstance(obj, list):
        return Record(line, ids=_ids(obj, where, "the list"))
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a list of token ids or an object, got {obj!r:.40}")
    if "input_ids" in obj:
        ids = _ids(obj["input_ids"], where, "input_ids")
        mask = obj.get("loss_mask")
        if mask is None:
            return Record(line, ids=ids)
        if (
            not isinstance(mask, list)
            or len(mask) != len(ids)
            or any(m not in (0, 1) for m in mask)
        ):
            raise DataError(f"{where}: loss_mask must be 0/1 values, one per input id")
        return Record(line, ids=ids, mask=tuple(int(m) for m in mask))
    if "messages" in obj:
        return Record(line, messages=_messages(obj["messages"], where))
    if isinstance(obj.get("text"), str):
        return Record(line, text=obj["text"])
    if isinstance(obj.get("prompt"), str) and isinstance(obj.get("response"), str):
        return Record(line, prompt=obj["prompt"], response=obj["response"])
    raise DataError(
        f"{where}: an object needs input_ids, text, messages, or prompt and response "
        f"(keys: {sorted(obj)})"
    )


def read_jsonl(path: Path, have_tokenizer: bool) -> list[Record]:
    """Every sample of the file, or a DataError naming the first bad line."""
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    records: list[Record] = []
    with path.open(encoding="utf-8", errors="strict") as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                where = f"{path} line {lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(
                        f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
                    ) from None
                rec = _record(obj, where, lineno)
                if rec.needs_tokenizer and not have_tokenizer:
                    raise DataError(f"{where}: text samples need --target-model (its tokenizer)")
                records.append(rec)
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not records:
        raise DataError(f"data file {path} holds no samples")
    return records


def check_vocab(records: list[Record], path: Path, vocab_size: int) -> None:
    """Token ids must index the target's embedding."""
    for rec in records:
        if rec.ids is not None and max(rec.ids) >= vocab_size:
            raise DataError(
                f"{path} line {rec.line}: token id {max(rec.ids)} is outside the target's "
                f"vocabulary of {vocab_size}"
            )


def too_short(path: Path | None, block: int, samples: int, note: str = "") -> str:
    """The one-line error when no sample can be trained on (before torch, or after tokenizing)."""
    where = f"{path}: no sample" if path is not None else "no sample"
    plural = "" if samples == 1 else "s"
    return (
        f"{where} has at least 2 blocks ({2 * block} tokens at block {block}) of supervised "
        f"tokens{note}; {samples} sample{plural} read"
    )


def check_trainable(records: list[Record], path: Path, block: int, seq_len: int) -> None:
    """Some sample must have 2 blocks of supervised tokens in its first ``seq_len`` (samples
    with fewer are dropped: the recipe's filter). Text is counted only once tokenized, after
    torch (dflash_train.build), so a file holding text passes here unless a token-id sample fits."""
    need = 2 * block
    counted = [(r.mask or (1,) * len(r.ids)) for r in records if r.ids is not None]
    if any(sum(m[:seq_len]) >= need for m in counted):
        return
    if any(r.needs_tokenizer for r in records):
        return
    cut = any(sum(m) >= need for m in counted)  # enough, but past --seq-len
    raise DataError(too_short(path, block, len(records), f" within --seq-len {seq_len}" * cut))
