#!/usr/bin/env python3
"""The app as ``python -m dflash_tui.cli.main`` runs it, with two of its drawing calls timed
(for bench/hosts_cost.py, which runs this in place of the app).

- the overview's redraw (``DflashApp.refresh_overview``: every host's row summarised, the
  overview's text built and set): the seconds of each call; and its paint, Textual's
  ``render_lines`` of the overview widget when the compositor asks for its lines (the text
  laid out into the lines on screen);
- the GPU grid's redraws (``GpuGrid.redraw``): how many, which says whether hosts not on
  screen draw (with one pane shown, about one a sample of that host);
- the hosts shown (``HostPane.catch_up``, called once each time a host's pane is shown, after
  its widgets are made): how many, which says when keys that show hosts have all been acted on.

Once a second a daemon thread appends ``{"t": epoch, "overview_s": [...],
"overview_paint_s": [...], "grid": N, "shown": N}`` to the
file ``$DFLASH_BENCH_TIMINGS`` (the calls since the last line). A tree where a name is missing
(an older or restructured app) runs untimed for that name, and the line says so in
``missing``. The timer's own cost is a clock read and a list append per call.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

TIMED = (
    ("overview_s", "dflash_tui.app.app", "DflashApp", "refresh_overview", True),
    ("overview_paint_s", "dflash_tui.app.screens.overview", "HostOverview", "render_lines", True),
    ("grid", "dflash_tui.app.host.gpus.grid", "GpuGrid", "redraw", False),
    ("shown", "dflash_tui.app.host.pane", "HostPane", "catch_up", False),
)


def wrap(cls: type, name: str, sink: list[float], keep_time: bool) -> None:
    inner: Callable[..., Any] = getattr(cls, name)

    def timed(self: object, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(self, *args, **kwargs)
        finally:
            sink.append(time.perf_counter() - t if keep_time else 1.0)

    setattr(cls, name, timed)


def install() -> tuple[dict[str, list[float]], list[str]]:
    import importlib

    sinks: dict[str, list[float]] = {}
    missing = []
    for key, module, cls_name, name, keep_time in TIMED:
        try:
            cls = getattr(importlib.import_module(module), cls_name)
            getattr(cls, name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{cls_name}.{name}")
            continue
        sinks[key] = []
        wrap(cls, name, sinks[key], keep_time)
    return sinks, missing


def writer(path: str, sinks: dict[str, list[float]], missing: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as out:
        while True:
            time.sleep(1.0)
            line: dict[str, Any] = {"t": time.time(), "missing": missing}
            for key, sink in sinks.items():
                taken, sink[:] = sink[:], []  # the GIL makes the swap whole enough here
                line[key] = taken if key.endswith("_s") else len(taken)
            out.write(json.dumps(line) + "\n")
            out.flush()


def main() -> int:
    try:  # as the app's own command starts (where the tree has this)
        from dflash_tui.cli.lean import asyncio_without_tls

        asyncio_without_tls()
    except ImportError:
        pass
    sinks, missing = install()
    path = os.environ.get("DFLASH_BENCH_TIMINGS")
    if path:
        threading.Thread(target=writer, args=(path, sinks, missing), daemon=True).start()
    from dflash_tui.cli.main import main as app_main

    return app_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
