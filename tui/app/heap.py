"""The collector's young threshold while the app samples, and the bound on Textual's cache of
the terminal's style codes.

Each sample of each host makes thousands of objects that live well under a second: the probe
line's JSON, its rows, the diagnosis' views, the messages. ``tune_collector`` (when the feeds
start) raises the young generation's threshold so those objects die before a young collection
promotes them; ``restore_collector`` (when the app leaves) puts it back, so an app started
again in the same process (tests) starts as this one did.

``bound_style_codes`` (each sample a pane draws) holds Textual's cache of each style's terminal
codes (``Strip.render_ansi``, up to 16,384 entries) to ``STYLE_CODES_CAP``. Its key is the whole
style, and a drawn row's styles carry the row's and each segment's offset for the mouse
(``Strip.apply_offsets``): a log line drawn at a new row, or with its words at new columns, is
a new key, about 560 bytes with the style it holds (some 9 MiB full). In the soak it held 3,300
entries after 700 samples and 4,600 after 2,900, and kept adding a few as lines came: the live
app's growth once its stores were full (bench/README.md, "Soak"; a headless app writes no
terminal codes, so there it stays empty). A style keeps its codes once worked out, so the cache
is only looked up for a new style equal to an earlier one: emptied, a few codes are worked out
again (microseconds each), and the screen is the same.

Nothing else of the heap is tuned. Handing glibc's free pages back (``malloc_trim``, every 18 s
of the soak) took 0.1 to 1.2 MiB off its RSS and nothing off its growth: the free bytes lie in
pieces under a page. Holding glibc's malloc to two arenas (``mallopt``) saved
under 0.5 MiB of the app's 52 MiB RSS with 8 panels at 0.5 s on the 2-core VM, and freezing
start-up's objects out of the collector (``gc.freeze``) saved no measurable CPU per sample
(``bench/rss_parts.py --seconds 15 --topology 0-4:5-7 --env MALLOC_ARENA_MAX=16`` and
``bench/monitor_cost.py --gpu nvml --seconds 15 --repeats 2 --intervals 1,0.5`` against a tree
without the freeze): both were below what would be worth a call into the C library or a
pinned heap (2 MiB, or 5 % of the CPU per sample).
"""

from __future__ import annotations

import gc

from textual.strip import Strip

# Objects allocated before CPython collects its youngest generation (its default: 700).
GC_YOUNG = 7000
_young_before: int | None = None  # the threshold tune_collector raised, for restore_collector
# Entries of Textual's style-code cache kept at most: a screen's worth of styles (a 120x40
# screen draws a few thousand segments, most of them styles that already know their codes).
STYLE_CODES_CAP = 2048


def tune_collector() -> None:
    """Raise the collector's young threshold to ``GC_YOUNG`` (never lower it). At the default,
    a young collection ran every ~0.2 s with 8 hosts, promoting what was still in flight, and
    the full collections that walk every object (~0.14 s each here) came every ~10 s. With ten
    times the threshold those objects die first (8 hosts at 1 Hz: about 1 % of a core less,
    bench/hosts_cost.py)."""
    global _young_before
    young, *older = gc.get_threshold()
    if young < GC_YOUNG:
        _young_before = young if _young_before is None else _young_before
        gc.set_threshold(GC_YOUNG, *older)


def restore_collector() -> None:
    """Put the young threshold back as it was before ``tune_collector`` (the app is leaving:
    another in the same process starts as this one)."""
    global _young_before
    if _young_before is not None:
        gc.set_threshold(_young_before, *gc.get_threshold()[1:])
        _young_before = None


def bound_style_codes() -> None:
    """Empty Textual's cache of terminal style codes once it holds over ``STYLE_CODES_CAP``
    entries (functools' ``cache_info`` and ``cache_clear``; a Textual whose ``render_ansi`` is
    not such a cache has nothing to bound)."""
    cache = getattr(Strip.render_ansi, "__func__", None)
    info = getattr(cache, "cache_info", None)
    if info is not None and info().currsize > STYLE_CODES_CAP:
        cache.cache_clear()  # type: ignore[union-attr]
