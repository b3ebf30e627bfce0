"""The ``[keys]`` table: the user's keymap for the app, binding id -> key(s) (pure).

```
[keys]
launch = "L"               # one key replaces the default
refresh = "ctrl+r,f5"      # several, comma-separated (or a list: ["ctrl+r", "f5"])
```

The ids are the app's (config_keys.KEY_IDS; an unknown one is an error there). Each key is a
Textual key name (``x``, ``X``, ``ctrl+r``, ``f5``, ``question_mark``) or one printable
character (``?``). Clashes (two bindings on one key) are the app's to check: only it knows the
default keys (tui/app/keys/keymap.py).
"""

from __future__ import annotations

import re
from typing import Any

Keymap = tuple[tuple[str, str], ...]  # (binding id, "key1,key2"), in the table's order

_KEY = re.compile(r"(?:(?:ctrl|shift|alt|meta|super|hyper)\+)*(?:[A-Za-z0-9_]{2,40}|[!-~])")


def keymap_from_table(table: Any) -> Keymap:
    """``[keys]`` read and checked; raises ValueError naming the bad value."""
    if not isinstance(table, dict):
        raise ValueError("[keys] must be a table of binding id = key")
    out = []
    for binding_id, value in table.items():
        keys = _keys(binding_id, value)
        out.append((binding_id, ",".join(keys)))
    return tuple(out)


def _keys(binding_id: str, value: Any) -> list[str]:
    where = f"keys.{binding_id}"
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise ValueError(f"{where} must be a key name or a list of them, not {value!r}")
    keys = [k.strip() for k in items]
    if not keys or any(not _KEY.fullmatch(k) for k in keys):
        bad = next((k for k in keys if not _KEY.fullmatch(k)), "")
        raise ValueError(
            f"{where}: {bad!r} is not a key (a name like x, X, ctrl+r, f5, question_mark, or "
            "one printable character; several are separated by commas)"
        )
    return keys
