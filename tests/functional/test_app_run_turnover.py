"""Runs that start and end do not pile up in the app's memory, nor do the places lines are drawn.

Each run brings its own log tail (its run log) and changes the run keys in the footer; once
the run's log is gone and the footer is made again, those widgets must be free. Textual keeps
a watcher of another object's attribute (``watch(app, "theme")``, ``data_bind``) until that
attribute next changes, which held every finished run's log tail with its lines and every
earlier footer's keys for the app's life (bench/README.md, "Soak"). Counted by weak
references after a collection, not by RSS.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

from rich.color import ColorSystem
from rich.style import Style
from support import LineCaches, until
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widget import Widget

from dflash_tui.app.app import DflashApp
from dflash_tui.app.heap import STYLE_CODES_CAP
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.keys.footer import KeyFooter
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)
RUNS = 6
SAMPLES_A_RUN = 4
# Textual's list of a container's children keeps its last arrangement until the next change:
# the latest removed widget of a kind may still be held there, never more.
LATEST_HELD = 1


def sample(i: int, run: int, alive: bool) -> Snapshot:
    rid = f"run-{run:03d}"
    rec = {"id": rid, "dir": f"/w/{rid}", "pid": 5000 + run, "pgid": 5000 + run,
           "started_at": float(100 * run), "log_path": f"/w/{rid}/output.log"}  # fmt: skip
    logs = [{"path": "/var/log/worker.log", "exists": True, "size": i, "lines": [f"w {i}"]}]
    procs = [{"pid": 1, "ppid": 0, "cmd": "init", "state": "S"}]
    if alive:
        logs.append({"path": f"/w/{rid}/output.log", "exists": True, "size": i,
                     "lines": [f"step={i} loss=2.0"] * 50, "is_run_log": True})  # fmt: skip
        procs.append({"pid": 5000 + run, "ppid": 1, "pgid": 5000 + run, "cmd": "python train.py",
                      "state": "R", "start_ticks": 10})  # fmt: skip
    else:
        rec |= {"exit_code": run % 2, "ended_at": float(100 * run + 50)}
    doc = {"time": float(100 * run + i), "procs": procs, "logs": logs, "run": rec,
           "telemetry": {"source": "none", "error": "no GPUs here"}}  # fmt: skip
    return Snapshot.from_dict(doc)


def removed_alive(refs: Refs, app: DflashApp) -> list[Widget]:
    gc.collect()
    shown = set(map(id, app.screen.query("*")))
    return [w for r in refs.values() if (w := r()) is not None and id(w) not in shown]


Refs = dict[int, weakref.ref[Widget]]


def held_tails(refs: Refs, app: DflashApp) -> list[str]:
    return [t.data.path for t in removed_alive(refs, app) if isinstance(t, LogTail)]


async def play_runs(
    pilot: Pilot, app: DflashApp, source: ScriptedSource, look: Callable[[], None] = lambda: None
) -> tuple[Refs, Refs]:
    """Every log tail and footer key shown along the runs, by weak reference; ``look`` is
    called after each sample is drawn."""
    tails: Refs = {}
    keys: Refs = {}
    n = 0
    for run in range(RUNS):
        for k in range(SAMPLES_A_RUN + 1):  # the run's samples, then one after it ended
            source.push(sample(n, run, alive=k < SAMPLES_A_RUN))
            n += 1
            await until(pilot, lambda n=n: app.samples >= n)
            await pilot.pause()
            look()
            tails |= {id(t): weakref.ref(t) for t in app.screen.query(LogTail)}
            keys |= {id(f): weakref.ref(f) for f in app.screen.query("FooterKey")}
        # As when a run's keys come and go (what the footer shows changes): made again.
        footer = app.screen.query_one(KeyFooter)
        footer.call_next(footer.bindings_changed, app.screen)
        await pilot.pause(0.1)
    return tails, keys


async def test_finished_runs_log_tails_and_old_footer_keys_are_freed() -> None:
    source = ScriptedSource()
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=SIZE) as pilot:
        tails, keys = await play_runs(pilot, app, source)
        assert len(tails) >= RUNS  # a run log's tail each run (held until the end: no reuse)
        # Until the last sample's removals and the last recompose are done (a loaded machine);
        # before the fix every earlier tail and key stays held however long it waits.
        await until(
            pilot,
            lambda: len(held_tails(tails, app)) <= LATEST_HELD,
            10,
            lambda: held_tails(tails, app),
        )
        assert len(keys) > len(app.screen.query("FooterKey"))  # the footer was made again
        await until(
            pilot,
            lambda: len(removed_alive(keys, app)) <= LATEST_HELD,
            10,
            lambda: len(removed_alive(keys, app)),
        )


async def test_the_lines_a_finished_runs_tail_and_old_footer_keys_drew_go_with_them() -> None:
    """A finished run's log tail and the footer's keys made again leave no drawn lines behind:
    Textual keeps the line caches of up to 1024 removed widgets alive, and without them
    emptied before the removal (tui/app/widgets/removal.py) each held every line its widget
    drew (the tail's and its scroll bar's)."""
    source = ScriptedSource()
    app = DflashApp(Config(), source=source)
    caches = LineCaches()

    def look() -> None:
        for widget in [*app.screen.query(LogTail), *app.screen.query("FooterKey")]:
            caches.take(widget)

    async with app.run_test(size=SIZE) as pilot:
        await play_runs(pilot, app, source, look)
        assert caches.with_lines() > 0 and caches.removed() > RUNS  # the tails and keys gone
        assert caches.left_with_lines() == []


def offset_styles(n: int) -> list[Style]:
    """Styles as a drawn row's segments carry them (``Strip.apply_offsets``): one per place."""
    return [Style(color="green") + Style.from_meta({"offset": (i % 100, i)}) for i in range(n)]


async def test_textual_style_codes_stay_within_the_cap_as_samples_come() -> None:
    """Each log line drawn at a new row is a new key of Textual's style-code cache (16,384
    entries, about 560 bytes each, filled by a live app over hours): each sample a shown pane
    draws empties it once it holds over the cap. Headless, nothing is written to a terminal,
    so the styles a terminal's frames would add are added here."""
    codes = Strip.render_ansi.__func__  # type: ignore[attr-defined]
    source = ScriptedSource()
    app = DflashApp(Config(), source=source)
    async with app.run_test(size=SIZE) as pilot:
        for n, style in enumerate(offset_styles(STYLE_CODES_CAP + 500)):
            Strip.render_style(style, f"x{n}", ColorSystem.TRUECOLOR)
        assert codes.cache_info().currsize > STYLE_CODES_CAP  # what a terminal's frames add
        source.push(sample(0, 0, alive=True))
        await until(pilot, lambda: app.samples >= 1)
        assert codes.cache_info().currsize <= STYLE_CODES_CAP


def test_a_style_draws_the_same_codes_after_the_cache_was_emptied() -> None:
    """Emptying the cache changes no byte written: the codes are worked out again."""
    styles = offset_styles(50)
    before = [Strip.render_style(s, "text", ColorSystem.TRUECOLOR) for s in styles]
    Strip.render_ansi.__func__.cache_clear()  # type: ignore[attr-defined]
    again = [Strip.render_style(s, "text", ColorSystem.TRUECOLOR) for s in offset_styles(50)]
    assert again == before and all("\x1b[" in x for x in before)
