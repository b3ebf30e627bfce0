"""Checks of the paths and files named on the command line, before torch (stdlib only):
the target model directory and its config.json, the resume file, the out dir and events file."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dflash_train.presets import Preset


class UsageError(ValueError):
    """A bad argument, reported as one line before any heavy work."""


def check_target_model(path: Path | None, preset: Preset) -> Path | None:
    """``--target-model``: a local HF model directory with a plain-RoPE config.json."""
    if path is None:
        if preset.target_config is None:
            raise UsageError(f"--preset {preset.name} needs --target-model PATH")
        return None
    if not path.exists():
        raise UsageError(f"--target-model {path} does not exist (a local model directory)")
    if not (path / "config.json").is_file():
        raise UsageError(f"--target-model {path} has no config.json (not a Hugging Face model)")
    kind = rope_scaling(_model_config(path))
    if kind is not None and kind not in ROPE_TYPES:  # the drafter must rotate as the target
        raise UsageError(
            f"--target-model {path} uses {kind} rope scaling; the drafter supports "
            f"{', '.join(ROPE_TYPES)} (transformers' rope functions)"
        )
    return path


# Scaled RoPE the drafter builds with transformers' own functions (dflash_train.model).
ROPE_TYPES = ("linear", "dynamic", "yarn", "llama3")


def has_chat_template(path: Path) -> bool:
    """Whether a model directory's tokenizer carries a chat template (no tokenizer loaded)."""
    if (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file():
        return True
    try:
        cfg = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and bool(cfg.get("chat_template"))


def model_config(path: Path) -> dict[str, Any]:
    return _model_config(path)


def _model_config(path: Path) -> dict[str, Any]:
    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--target-model {path}: unreadable config.json ({exc})") from None
    if not isinstance(cfg, dict):
        raise UsageError(f"--target-model {path}: config.json is not a JSON object")
    return cfg


def rope_scaling(cfg: dict[str, Any]) -> str | None:
    """The rope scaling type a HF config asks for (yarn, llama3, ...), None for plain RoPE."""
    text = cfg.get("text_config")
    for c in (cfg, text if isinstance(text, dict) else {}):
        for key in ("rope_scaling", "rope_parameters"):  # transformers 4 and 5 spell it so
            v = c.get(key)
            if isinstance(v, dict):
                kind = str(v.get("rope_type") or v.get("type") or "default")
                if kind != "default":
                    return kind
    return None


def vocab_size(preset: Preset, target_model: Path | None) -> int | None:
    if target_model is None:
        return int(preset.target_config["vocab_size"]) if preset.target_config else None
    cfg = _model_config(target_model)
    text = cfg.get("text_config")
    vocab = cfg.get("vocab_size") or (text.get("vocab_size") if isinstance(text, dict) else None)
    return int(vocab) if isinstance(vocab, int) else None


def _unwritable(dirs: list[Path]) -> tuple[Path, str] | None:
    """The first directory of ``dirs`` where no file can be created, and why (None: all can).

    Really tries (missing directories, parents too, then a temporary file in each), since
    permission bits say little (root, read-only mounts, /proc), but leaves no trace: the
    directories it had to create are removed again, so a run that fails a later check has
    created nothing.
    """
    made: list[Path] = []
    try:
        for folder in dirs:
            folder = Path(os.path.abspath(folder))
            missing = []
            p = folder
            while not p.exists() and p != p.parent:
                missing.append(p)
                p = p.parent
            for d in reversed(missing):
                try:
                    d.mkdir()
                except OSError as exc:
                    return folder, f"cannot create directory {d}: {exc.strerror or exc}"
                made.append(d)
            try:
                fd, name = tempfile.mkstemp(prefix=".dflash-write-check-", dir=folder)
                os.close(fd)
                os.unlink(name)
            except OSError as exc:
                return folder, f"cannot create a file in {folder}: {exc.strerror or exc}"
        return None
    finally:
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:  # something else put a file there meanwhile: leave it
                pass


def check_paths(ns: argparse.Namespace, env: dict[str, str], out_dir: Path) -> None:
    try:
        _check_paths(ns, env, out_dir)
    except OSError as exc:  # e.g. a parent directory we may not even look into (EACCES)
        where = f" {exc.filename}" if exc.filename else ""
        raise UsageError(f"cannot check{where}: {exc.strerror or exc}") from None


def _check_paths(ns: argparse.Namespace, env: dict[str, str], out_dir: Path) -> None:
    """Files the run reads or writes, before torch: a missing ``--resume`` file, an out dir
    (and its checkpoints/) or an explicit ``--events`` file that cannot be written."""
    if ns.resume is not None and ns.resume != "auto":
        path = Path(ns.resume)
        if not path.is_file():
            what = "a directory, not a checkpoint file" if path.is_dir() else "no such file"
            raise UsageError(
                f"--resume {ns.resume}: {what} (a step_N.pt, or 'auto' for the latest)"
            )
        try:
            path.open("rb").close()
        except OSError as exc:
            raise UsageError(f"--resume {ns.resume} cannot be read ({exc.strerror})") from None
    if ns.out_dir is not None:
        label = f"--out-dir {out_dir}"
    elif env.get("DFLASH_RUN_DIR"):
        label = f"$DFLASH_RUN_DIR {out_dir}"
    else:
        label = f"the default out dir {out_dir} (--out-dir)"
    bad = _unwritable([out_dir, out_dir / "checkpoints"])
    if bad is not None:
        raise UsageError(f"{label} is not writable ({bad[1]})")
    events: Path | None = ns.events
    if events is None:  # $DFLASH_EVENTS (the supervisor's) stays best effort: a warning
        return
    if events.is_dir():
        raise UsageError(f"--events {events} is a directory, not a file")
    if events.exists():
        try:
            events.open("a").close()  # appending nothing changes nothing
        except OSError as exc:
            raise UsageError(f"--events {events} is not writable ({exc.strerror})") from None
        return
    bad = _unwritable([events.parent])
    if bad is not None:
        raise UsageError(f"--events {events} is not writable ({bad[1]})")
