"""``dflash-tui launch`` then ``dflash-tui wait``, timed, as a script driving a run would."""

from __future__ import annotations

import subprocess
import sys
import time

# The bundled tiny pipeline on the CPU, long enough to wait on and kill.
TINY = f"{sys.executable} -m dflash_train.train --preset tiny --device cpu --steps 3000"


def cli(*args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def timed(*args: str, timeout: float = 180.0) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    res = cli(*args, timeout=timeout)
    return res, time.monotonic() - t0
