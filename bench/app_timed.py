#!/usr/bin/env python3
"""The app as ``python -m dflash_tui.cli.main`` runs it, with some of its calls timed (for
bench/hosts_cost.py, which runs this in place of the app).

- the overview's redraw (``DflashApp.refresh_overview``: every host's row summarised, the
  overview's text built and set): the seconds of each call; and its paint, Textual's
  ``render_lines`` of the overview widget when the compositor asks for its lines (the text
  laid out into the lines on screen);
- the GPU grid's redraws (``GpuGrid.redraw``): how many, which says whether hosts not on
  screen draw (with one pane shown, about one a sample of that host);
- the hosts shown (``HostPane.catch_up``, called once each time a host's pane is shown, after
  its widgets are made): how many, which says when keys that show hosts have all been acted on.

And where the app's CPU goes, a stage at a time, as each stage's own thread's CPU time
(``time.thread_time``, so a stage in the record thread counts that thread's time, not the
loop's; what a call waits for is not counted):

- ``parse``: ``Snapshot.from_json``, a probe line into its records (one call a host-sample);
- ``tracker``: ``Tracker.add``, the history and the diagnosis;
- ``record``: ``Recorder.add``, the flight recorder's encode, compress and write (its thread);
- ``ready``: ``HostFeeds.sample_ready``, the alert watchers, the pane's store and, for the
  host on screen, its drawing, and the overview's row;
- ``ssh``: asyncssh's ``SSHConnection.data_received`` (the protocol's entry for the bytes
  read: decryption, the channel's data into its reader's buffer; the lines are cut from it
  later, in the feed's task, which no stage holds);
- ``gc0``, ``gc1``, ``gc2``: CPython's collections of each generation (``gc.callbacks``), in
  whichever stage was running when they came: counted there too.

Once a second a daemon thread appends ``{"t": epoch, "cpu": process CPU seconds,
"overview_s": [...], "overview_paint_s": [...], "grid": N, "shown": N, "stages": {name:
[thread CPU seconds of each call]}}`` to the file ``$DFLASH_BENCH_TIMINGS`` (the calls since
the last line). A tree where a name is missing (an older or restructured app) runs untimed for
that name, and the line says so in ``missing``. The timers' own cost is a clock read (two for
a stage: a system call each) and a list append per call.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

Clock = Callable[[], float]
COUNT = None  # a call counted, not timed

# (key, module, class, method, clock): each call's seconds by the clock, or only the call.
TIMED: tuple[tuple[str, str, str, str, Clock | None], ...] = (
    ("overview_s", "dflash_tui.app.app", "DflashApp", "refresh_overview", time.perf_counter),
    ("overview_paint_s", "dflash_tui.app.screens.overview", "HostOverview", "render_lines",
     time.perf_counter),
    ("grid", "dflash_tui.app.host.gpus.grid", "GpuGrid", "redraw", COUNT),
    ("shown", "dflash_tui.app.host.pane", "HostPane", "catch_up", COUNT),
)  # fmt: skip

# (key, module, class, method): each call's thread CPU time (the module docstring). None is
# called inside another, so bench/hosts_cost.py takes their sum from the process's CPU.
STAGES = (
    ("parse", "dflash_tui.core.base.snapshot", "Snapshot", "from_json"),
    ("tracker", "dflash_tui.core.diagnosis.tracker", "Tracker", "add"),
    ("record", "dflash_tui.core.record.recorder", "Recorder", "add"),
    ("ready", "dflash_tui.app.host.feeds", "HostFeeds", "sample_ready"),
    ("ssh", "asyncssh.connection", "SSHConnection", "data_received"),
)
COLLECTIONS = ("gc0", "gc1", "gc2")  # CPython's collections, by generation


def wrap(cls: type, name: str, sink: list[float], clock: Clock | None) -> None:
    """``cls.name`` (a method or a classmethod, its own or inherited) with each call's
    ``clock`` seconds appended to ``sink`` (1.0 a call without a clock)."""
    kept = inspect.getattr_static(cls, name)
    inner = getattr(kept, "__func__", kept)
    if isinstance(kept, staticmethod) or not callable(inner):
        raise TypeError(f"{cls.__name__}.{name}: only a method or a classmethod is timed")

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = clock() if clock is not None else 0.0
        try:
            return inner(*args, **kwargs)
        finally:
            sink.append(clock() - t if clock is not None else 1.0)

    setattr(cls, name, classmethod(timed) if isinstance(kept, classmethod) else timed)


def collections_timed(sinks: dict[str, list[float]]) -> None:
    """Each collection's thread CPU seconds, by generation (``COLLECTIONS``)."""
    for key in COLLECTIONS:
        sinks[key] = []
    began: dict[int, float] = {}

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[threading.get_ident()] = time.thread_time()
        elif (t := began.pop(threading.get_ident(), None)) is not None:
            sinks[COLLECTIONS[info["generation"]]].append(time.thread_time() - t)

    gc.callbacks.append(seen)


def install(
    table: Iterable[tuple[str, str, str, str, Clock | None]], missing: list[str]
) -> dict[str, list[float]]:
    """Each entry of ``table`` timed into a sink of its key; a name this tree lacks is left
    untimed and said in ``missing``."""
    sinks: dict[str, list[float]] = {}
    for key, module, cls_name, name, clock in table:
        try:
            cls = getattr(importlib.import_module(module), cls_name)
            inspect.getattr_static(cls, name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{cls_name}.{name}")
            continue
        sinks[key] = []
        wrap(cls, name, sinks[key], clock)
    return sinks


def taken(sink: list[float]) -> list[float]:
    """The calls in ``sink``, taken out; one appended meanwhile (the record thread's) stays."""
    out = sink[:]
    del sink[: len(out)]
    return out


def writer(
    path: str, sinks: dict[str, list[float]], stages: dict[str, list[float]], missing: list[str]
) -> None:
    with open(path, "a", encoding="utf-8") as out:
        while True:
            time.sleep(1.0)
            line: dict[str, Any] = {"t": time.time(), "missing": missing}
            for key, sink in sinks.items():
                calls = taken(sink)
                line[key] = calls if key.endswith("_s") else len(calls)
            line["stages"] = {key: taken(sink) for key, sink in stages.items()}
            # After the calls are taken: a call that ends in between is in this line's CPU
            # and in the next line's calls, never in a line's calls without its CPU.
            line["cpu"] = time.process_time()
            out.write(json.dumps(line) + "\n")
            out.flush()


def main() -> int:
    try:  # as the app's own command starts (where the tree has this)
        from dflash_tui.cli.lean import asyncio_without_tls

        asyncio_without_tls()
    except ImportError:
        pass
    missing: list[str] = []
    sinks = install(TIMED, missing)
    stages = install(((*stage, time.thread_time) for stage in STAGES), missing)
    collections_timed(stages)
    path = os.environ.get("DFLASH_BENCH_TIMINGS")
    if path:
        args = (path, sinks, stages, missing)
        threading.Thread(target=writer, args=args, daemon=True).start()
    from dflash_tui.cli.main import main as app_main

    return app_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
