"""The log keys beside the filter: `s` search with `n`/`N` (matches marked and counted in
the title), the title's word on lines wider than the pane, `S` saves the view, `v` opens
the whole log in $PAGER through a terminal-safe copy read over the host's transport."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from rich.text import Text
from support import until
from textual.pilot import Pilot

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.search import SearchState, hscroll_label
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)
HOSTILE = "\x1b]0;pwned\x07\x1b[31mred\x1b[0m [bold]not markup[/bold] tail"


def with_log(snaps: list[Snapshot], path: str, extra: tuple[str, ...]) -> list[Snapshot]:
    """The healthy run, its log at ``path``, the first sample carrying ``extra`` lines too."""
    out = []
    for k, snap in enumerate(snaps):
        log = dataclasses.replace(
            snap.logs[0],
            path=path,
            lines=(snap.logs[0].lines + extra) if k == 0 else snap.logs[0].lines,
        )
        out.append(dataclasses.replace(snap, logs=(log,)))
    return out


async def settle(pilot: Pilot, app: DflashApp, n: int) -> LogTail:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.3)
    return app.detail().logs().query_one(LogTail)


def title(tail: LogTail) -> str:
    return str(tail.title_bar.render())


def test_search_state_steps_and_counts() -> None:
    import re

    s = SearchState(pattern=re.compile("b"))
    s.update(["a", "b1", "c", "b2", "b3"])
    assert s.matches == [1, 3, 4] and s.label() == "search -/3"
    assert s.step(True, from_line=2) == 3 and s.label() == "search 2/3"
    assert s.step(True, 0) == 4 and s.step(True, 0) == 1  # wraps round
    assert s.step(False, 0) == 4
    s.update(["a", "b1", "c", "b2", "b3", "b4"])  # a line came: the current one is kept
    assert s.matches[s.at] == 4 and s.label() == "search 3/4"
    assert hscroll_label(0, 0) == "" and hscroll_label(0, 12) == "cut: ← →"
    assert hscroll_label(40, 120) == "→ scrolled 40"


async def test_s_searches_n_and_capital_n_step_and_the_title_counts() -> None:
    snaps = scenes.healthy_run()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(snaps))
        await pilot.press("s", *"step=21", "enter")
        await until(pilot, lambda: "/10" in title(tail))
        first = tail.search.at
        assert first >= 0 and f"search {first + 1}/10" in title(tail), title(tail)
        assert not tail.follow  # stepping to a match pauses following
        line = tail.search.matches[tail.search.at]
        assert "step=21" in tail.log_view.lines[line]
        top = int(tail.log_view.scroll_y)
        assert top <= line < top + tail.log_view.size.height  # the match is in sight
        await pilot.press("n")
        assert tail.search.at == (first + 1) % 10, title(tail)
        await pilot.press("N", "N")
        assert tail.search.at == (first - 1) % 10
        marked = Text("x step=215 loss")
        tail.highlighter.highlight(marked)
        assert any(s.start == 2 and s.end == 9 and "reverse" in str(s.style) for s in marked.spans)
        assert tail.data.store.pattern is not None  # the filter is untouched by the search
        await pilot.press("s", *["backspace"] * 7, "enter")  # empty: the search ends
        await until(pilot, lambda: "search" not in title(tail))


async def test_title_says_lines_are_cut_and_how_far_they_scroll() -> None:
    snaps = with_log(scenes.healthy_run(samples=2), "/w/out.log", ("step=1 " + "x" * 300,))
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(snaps))
        await until(pilot, lambda: "cut: ← →" in title(tail))
        tail.log_view.scroll_to(x=40, animate=False, immediate=True)
        await until(pilot, lambda: "→ scrolled 40" in title(tail))


async def test_a_tail_with_no_lines_never_says_cut_and_a_resize_says_again() -> None:
    """Before its first layout a log view has no width (and Textual's scroll range is not
    its own): a missing log's title drawn then must not say its lines are cut. A line cut
    at one width is whole at a wider one: the title follows the resize."""
    seed = scenes.seed_incident()  # its run log is missing: no lines at all
    app = DflashApp(Config(), source=ScriptedSource(seed))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(seed))
        assert "MISSING" in title(tail) and tail.log_view.line_count == 0
        assert "cut" not in title(tail), title(tail)
    snaps = with_log(scenes.healthy_run(samples=2), "/w/out.log", ("step=1 " + "x" * 90,))
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(snaps))
        await until(pilot, lambda: "cut: ← →" in title(tail))
        await pilot.resize_terminal(360, 40)
        await until(pilot, lambda: tail.log_view.max_scroll_x == 0)
        await until(pilot, lambda: "cut" not in title(tail))


async def test_capital_s_saves_the_lines_shown_as_plain_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    snaps = with_log(scenes.healthy_run(samples=2), "/w/out.log", ("step=1 " + HOSTILE,))
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(snaps))
        await pilot.press("S")
        await until(pilot, lambda: bool(app.log_keys.saved))
        saved = Path(app.log_keys.saved[0])
        assert saved.parent == tmp_path / "state" / "dflash-tui" / "saved"
        text = saved.read_text()
        assert text.splitlines() == list(tail.log_view.lines)
        assert "\x1b" not in text and "\x07" not in text and "[bold]not markup[/bold]" in text


async def test_v_opens_a_terminal_safe_copy_in_the_pager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "out.log"
    log.write_bytes(("first line\n" + HOSTILE + "\nlast line\n").encode())
    seen = tmp_path / "pager-saw.txt"
    # The pager: a shell that copies the file it was given, and says which file it was.
    monkeypatch.setenv("PAGER", f'sh -c \'cat "$1" > {seen}; echo "$1" >> {seen}.arg\' pager')
    snaps = with_log(scenes.healthy_run(samples=2), str(log), ())
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, len(snaps))
        await pilot.press("v")
        await until(pilot, lambda: Path(f"{seen}.arg").exists() and seen.exists())
        await until(pilot, lambda: not Path(Path(f"{seen}.arg").read_text().strip()).exists())
    got = seen.read_text()
    assert got.splitlines()[0] == "first line" and got.splitlines()[-1] == "last line"
    assert "\x1b" not in got and "\x07" not in got and "red [bold]not markup[/bold] tail" in got


async def test_capital_w_wraps_long_lines_and_back() -> None:
    long = "step=1 " + "".join(f"{i:03d}-" for i in range(100))  # 407 characters
    snaps = with_log(scenes.healthy_run(samples=2), "/w/out.log", (long,))
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        tail = await settle(pilot, app, len(snaps))
        before = len(tail.log_view.lines)
        await until(pilot, lambda: "cut: ← →" in title(tail))
        await pilot.press("W")
        await pilot.pause(0.2)
        width = tail.wrap_width
        assert tail.wrap and 20 < width < SIZE[0]
        rows = list(tail.log_view.lines)
        assert len(rows) == before + (len(long) - 1) // width  # the long line, cut in rows
        assert all(len(r) <= width for r in rows)
        at = next(i for i, r in enumerate(rows) if r.startswith("step=1 000"))
        assert "".join(rows[at : at + 1 + (len(long) - 1) // width]) == long  # nothing lost
        await until(pilot, lambda: "cut" not in title(tail))
        await pilot.press("W")
        await pilot.pause(0.2)
        assert not tail.wrap and len(tail.log_view.lines) == before and long in tail.log_view.lines
