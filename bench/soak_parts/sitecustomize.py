"""Where the soaked app's resident memory is, read inside it: put this folder on PYTHONPATH
(an absolute path: the app runs in a folder of its own) and set SOAK_PARTS_DIR, and the app
(only a process started as ``-m dflash_tui.cli.main``; the feed and bench/soak.py itself are
left alone) appends a JSON line to SOAK_PARTS_DIR/parts.jsonl every SOAK_PARTS_EVERY seconds
(default 36: each tenth of a 6-minute soak):

- ``rss``: VmRSS, MiB; ``samples``: the feed's count so far (its state file beside the run root);
- ``py_arenas`` / ``py_used``: CPython's small-object allocator, its 1 MiB arenas held and the
  bytes in blocks in use (``sys._debugmallocstats``);
- ``m_sys`` / ``m_free`` / ``narenas``: glibc malloc over all its arenas (``malloc_info``), the
  bytes it holds from the system and the free bytes among them (objects over 512 bytes: lists,
  dicts, deque blocks, long strings);
- ``lru``: every functools cache over 50 entries by name (Textual's and Rich's among them);
- ``types``: the 80 most numerous objects the collector tracks, by type.

SOAK_PARTS_TRIM_FROM=K: from the K-th line on, ``malloc_trim(0)`` after reading, and ``rss_trimmed``
after it (what glibc could give back). SOAK_PARTS_FRAMES=N: tracemalloc with N frames from the
start, a snapshot beside each line (slow: the app falls behind the feed).

    PYTHONPATH=$PWD/bench/soak_parts SOAK_PARTS_DIR=/tmp/parts \\
        .venv/bin/python bench/soak.py --what app --minutes 6 --run-samples 600

Linux and glibc only; a bench tool, never imported by the app.
"""

import os
from pathlib import Path

if (
    os.environ.get("SOAK_PARTS_DIR")
    and b"dflash_tui.cli.main" in Path("/proc/self/cmdline").read_bytes()
):
    import ctypes
    import functools
    import gc
    import json
    import re
    import sys
    import threading
    import time
    import tracemalloc
    from collections import Counter

    OUT = Path(os.environ["SOAK_PARTS_DIR"])
    OUT.mkdir(parents=True, exist_ok=True)
    FRAMES = int(os.environ.get("SOAK_PARTS_FRAMES", "0"))
    EVERY = float(os.environ.get("SOAK_PARTS_EVERY", "36"))
    TRIM_FROM = int(os.environ.get("SOAK_PARTS_TRIM_FROM", "-1"))
    MIB = 2**20
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]

    def rss() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def samples() -> int:
        try:
            argv = Path("/proc/self/cmdline").read_bytes().decode().split("\0")
            state = Path(argv[argv.index("--run-root") + 1]).parent / "feed.state"
            return int(state.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return -1

    def glibc() -> dict:
        path = str(OUT / "malloc_info.xml").encode()
        fp = libc.fopen(path, b"w")
        libc.malloc_info(0, fp)
        libc.fclose(fp)
        xml = Path(path.decode()).read_text()
        tail = xml[xml.rfind("</heap>") :]

        def total(kind: str) -> int:
            return int(re.search(rf'<total type="{kind}" count="\d+" size="(\d+)"', tail).group(1))

        held = int(re.search(r'<system type="current" size="(\d+)"', tail).group(1))
        return {
            "m_sys": held / MIB,
            "m_free": (total("fast") + total("rest")) / MIB,
            "m_mmap": total("mmap") / MIB,
            "narenas": xml.count("<heap nr="),
        }

    def pymalloc() -> dict:
        path = str(OUT / "pymalloc.txt")
        fd, saved = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        text = Path(path).read_text()

        def field(name: str) -> int:
            return int(
                re.search(re.escape(name) + r"\s*=\s*([\d,]+)", text).group(1).replace(",", "")
            )

        return {
            "py_arenas": field("# arenas allocated current"),
            "py_used": field("# bytes in allocated blocks") / MIB,
        }

    def caches() -> dict:
        out = {}
        for o in gc.get_objects():
            if type(o) is functools._lru_cache_wrapper and (n := o.cache_info().currsize) > 50:
                out[f"{getattr(o, '__module__', '?')}.{getattr(o, '__qualname__', '?')}"] = n
        return out

    def loop() -> None:
        if FRAMES:
            tracemalloc.start(FRAMES)
        k = 0
        while True:
            row = {"k": k, "samples": samples(), "rss": rss(), **pymalloc(), **glibc()}
            if FRAMES:
                row["traced"] = tracemalloc.get_traced_memory()[0] / MIB
                tracemalloc.take_snapshot().dump(str(OUT / f"snap-{k:03d}.pickle"))
            row["lru"] = caches()
            row["types"] = Counter(type(o).__qualname__ for o in gc.get_objects()).most_common(80)
            if 0 <= TRIM_FROM <= k:
                libc.malloc_trim(0)
                row["rss_trimmed"] = rss()
            with open(OUT / "parts.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
            k += 1
            time.sleep(EVERY)

    threading.Thread(target=loop, name="soak-parts", daemon=True).start()
