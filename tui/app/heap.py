"""What start-up built is kept out of the collector's full passes while the app runs.

A full (generation 2) collection walks every container object the process holds: about 95,000
once the app is up (Textual's DOM, styles and caches, the imported modules), 25 to 70 ms on the
2-core VM, all of it on the event loop. Start-up leaves such a pass owed, so it fell inside the
first flood of lines, and was the longest wait a key had in it (bench/log_flood.py). Once the
screen is up, one collection clears start-up's garbage and ``gc.freeze`` sets what lives on
aside: later full passes walk only what was made since. Leaving the app unfreezes it again,
so an app started again in the same process (tests) leaves nothing pinned behind.

The young generation's threshold is raised too (``tune_collector``, when the feeds start):
each sample makes thousands of objects that live well under a second.

Before any of the app's threads start, glibc's malloc is held to ``ARENAS`` arenas
(``few_arenas``): each thread that allocates would otherwise get an arena of its own, and each
arena keeps pages resident that another could have reused. On the H200 that was 1 MiB of the
app's 67 MiB RSS (bench/rss_parts.py with MALLOC_ARENA_MAX=2), against nvitop's 44 (issue 16).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Mapping

ARENAS = 2  # glibc malloc arenas for the whole app: its threads mostly wait
_M_ARENA_MAX = -8  # mallopt's parameter for it (glibc's malloc.h)


def few_arenas(env: Mapping[str, str] | None = None) -> bool:
    """Hold glibc's malloc to ``ARENAS`` arenas (call before the app's threads start); True
    when set. A ``MALLOC_ARENA_MAX`` in the environment wins (glibc read it at start), and a
    C library without ``mallopt`` (musl, macOS) is left as it is."""
    env = os.environ if env is None else env
    if "MALLOC_ARENA_MAX" in env or "glibc.malloc.arena_max" in env.get("GLIBC_TUNABLES", ""):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, ARENAS))


def settle_heap() -> None:
    """Collect start-up's garbage, then keep what lives on out of later full passes."""
    gc.collect()
    gc.freeze()


def thaw_heap() -> None:
    """Hand the frozen objects back to the collector and its young threshold as it was before
    ``tune_collector`` (the app is leaving: another in the same process starts as this one)."""
    gc.unfreeze()
    global _young_before
    if _young_before is not None:
        gc.set_threshold(_young_before, *gc.get_threshold()[1:])
        _young_before = None


# Objects allocated before CPython collects its youngest generation (its default: 700).
GC_YOUNG = 7000
_young_before: int | None = None  # the threshold tune_collector raised, for thaw_heap


def tune_collector() -> None:
    """Raise the collector's young threshold to ``GC_YOUNG`` (never lower it). Each sample of
    each host makes thousands of objects that live well under a second (the probe line's
    JSON, its rows, the diagnosis' views, the messages): at the default, a young collection
    ran every ~0.2 s with 8 hosts, promoting what was still in flight, and the full
    collections that walk every object (~0.14 s each here) came every ~10 s. With ten times
    the threshold those objects die first (8 hosts at 1 Hz: about 1 % of a core less,
    bench/hosts_cost.py)."""
    global _young_before
    young, *older = gc.get_threshold()
    if young < GC_YOUNG:
        _young_before = young if _young_before is None else _young_before
        gc.set_threshold(GC_YOUNG, *older)
