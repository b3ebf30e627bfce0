"""Checks of single config values (host addresses, container specs, labels, one-line strings),
shared by the config file and the flags (pure): nothing downstream sees a newline in a host
name or a container id with shell metacharacters."""

from __future__ import annotations

import re
import shlex
from typing import Any

from dflash_tui.core.base.config_keys import ConfigError

# No part may start with "-": an address must never read as an ssh option.
_HOST_RE = re.compile(
    r"^(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?"
    r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$"
)
_CONTAINER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# A label is shown on screen and given back as --host: a plain word that --host accepts.
_LABEL_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")


def validate_host(address: str) -> str:
    if not _HOST_RE.fullmatch(address):
        raise ConfigError(
            f"host {address!r} is not an ssh-config alias or [user@]host[:port] "
            "(letters, digits, '.', '_', '-' only)"
        )
    return address


def validate_label(label: str, where: str) -> str:
    if not _LABEL_RE.fullmatch(label):
        raise ConfigError(
            f"{where}.label {label!r}: letters, digits, '.', '_', '-' only (up to 64), "
            "not starting with '.' or '-'"
        )
    return label


def validate_container(spec: str) -> str:
    """Accept ``pct:ID``, ``docker:NAME`` or a template containing ``{cmd}`` (one line)."""
    if "\n" in spec or "\r" in spec or "\0" in spec:
        raise ConfigError("container: a newline or NUL is not allowed")
    kind, sep, ident = spec.partition(":")
    if sep and kind == "pct" and not ident.isdigit():
        raise ConfigError(f"container {spec!r}: a pct id is a number (the VMID), e.g. pct:200")
    if sep and kind in ("pct", "docker"):
        if not _CONTAINER_ID_RE.match(ident):
            raise ConfigError(
                f"container {spec!r}: {kind} id must be letters, digits, '.', '_', '-'"
            )
        return spec
    if "{cmd}" not in spec:
        raise ConfigError(
            f"container {spec!r}: use pct:ID, docker:NAME or a template containing {{cmd}}"
        )
    _check_template(spec)
    return spec


def _check_template(spec: str) -> None:
    """``{cmd}`` must be one unquoted word, once: inside quotes it would break our quoting."""
    try:
        words = shlex.split(spec.replace("{cmd}", " DFLASH_CMD_A DFLASH_CMD_B "))
    except ValueError as exc:
        raise ConfigError(f"container template {spec!r}: {exc}") from None
    alone = re.search(r"(?<!\S)\{cmd\}(?!\S)", spec) is not None
    if spec.count("{cmd}") != 1 or not alone or not {"DFLASH_CMD_A", "DFLASH_CMD_B"} <= set(words):
        raise ConfigError(
            f"container template {spec!r}: {{cmd}} must appear once, as a word of its own "
            "and not inside quotes (it is replaced by an already quoted `sh -c '...'`)"
        )


def no_newline(name: str, value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ConfigError(f"{name}: a newline or NUL is not allowed in {value[:40]!r}")
    return value


def one_line(name: str, value: str | None) -> str | None:
    return None if value is None else no_newline(name, value)


def typed(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    v = table.get(key)
    if v is not None and not isinstance(v, kind):
        raise ConfigError(f"{where}.{key} must be a {kind.__name__}, not {type(v).__name__}")
    return v
