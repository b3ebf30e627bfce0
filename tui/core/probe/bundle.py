"""How the probe travels: its parts and main.py joined into one program for ``python3 -``.

Runs in the supervisor, reads only this folder's files; nothing is installed where the probe
runs (docs/internals.md, "Probe command line").
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

# sent ahead of main.py, in this order
PROBE_PARTS = ("gpu.py", "tail.py", "files.py", "procs.py", "machine.py", "nvhealth.py")
_PARTS_BLOCK = re.compile(rb"^# >>> parts.*?^# <<< parts\n", re.MULTILINE | re.DOTALL)


@functools.cache
def probe_source() -> bytes:
    """The probe as one program, sent over stdin so nothing is installed where it runs.

    main.py imports its parts when run as a file or a module; over stdin the parts' code
    goes first and that import block is dropped.
    """
    here = Path(__file__).parent
    main, n = _PARTS_BLOCK.subn(b"", (here / "main.py").read_bytes())
    if n != 1:
        raise RuntimeError("probe/main.py lost its '# >>> parts' block")
    # a part's own import block (procs.py takes read_bytes from files.py, nvhealth.py SlowReads
    # from gpu.py) goes the same way
    parts = (_PARTS_BLOCK.sub(b"", (here / p).read_bytes()) for p in PROBE_PARTS)
    return b"\n".join(parts) + b"\n" + main
