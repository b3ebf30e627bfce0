"""A GPU panel's box as rows of Text (tui/app/host/gpus/panel.py), without a terminal: every row
exactly the column's width, the title and subtitle in the border, a long process line wrapped
at a word break, and the box's kind and colour following the GPU's state (error heavy, picked
double, stale greyed and saying how old)."""

from __future__ import annotations

import dataclasses
import itertools

from rich.style import Style
from rich.text import Text

from dflash_train.topology import Topology
from dflash_tui.app import scenes
from dflash_tui.app.host.gpus.fit import PANEL_H
from dflash_tui.app.host.gpus.panel import HISTORY, GpuPanel, fit_rows
from dflash_tui.app.widgets.palette import FALLBACK as PAL
from dflash_tui.core.diagnosis.severity import _LABEL
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.diagnosis.views import Diagnosis


def seed_diagnosis() -> Diagnosis:
    tracker = Tracker(Topology.parse("0-4:5-7"), live=False)
    diag = None
    for snap in scenes.seed_incident():
        diag = tracker.add(snap)
    assert diag is not None
    return diag


def panel_of(diag: Diagnosis, index: int) -> GpuPanel:
    panel = GpuPanel(index)
    view = next(v for v in diag.gpus if v.index == index)
    panel.show(view, diag.time, run_active=True)
    return panel


def test_every_row_is_the_column_wide_with_title_and_subtitle_in_the_border() -> None:
    diag = seed_diagnosis()
    for width in (29, 30, 41):
        for view in diag.gpus:
            rows = panel_of(diag, view.index).rows(PAL, width)
            assert len(rows) == PANEL_H
            assert [r.cell_len for r in rows] == [width] * PANEL_H, view.index
            top, bottom = rows[0].plain, rows[-1].plain
            assert top.startswith(("╭─ GPU ", "┏━ GPU ")) and top.endswith(("╮", "┓"))
            assert f"GPU {view.index} {view.role} " in top
            assert bottom.endswith((" ─╯", " ━┛")) and "°C" in bottom and "W " in bottom
            assert all(r.plain[0] in "│┃" and r.plain[-1] in "│┃" for r in rows[1:-1])
            assert "util" in rows[1].plain and "mem" in rows[2].plain


def test_the_box_follows_the_state_and_stays_the_same_list_while_nothing_changes() -> None:
    diag = seed_diagnosis()
    view = diag.gpus[0]
    panels = []
    for code, rule in _LABEL.items():  # one panel per label the rules know, alone on its GPU
        panel = GpuPanel(view.index)
        label = dataclasses.replace(view.labels[0], code=code)
        panel.show(dataclasses.replace(view, labels=(label,)), diag.time, run_active=True)
        assert panel.worst() == rule(True)
        panels.append(panel)
    assert {p.worst() for p in panels} >= {"error", "warning", "ok"}
    for p in panels:  # an error is heavy; every level has its colour, none its own: muted
        sev = p.worst()
        top = p.rows(PAL, 30)[0]
        assert top.plain[0] == ("┏" if sev == "error" else "╭"), (p.index, sev)
        want = PAL.fg(sev) if sev in ("error", "warning", "ok") else PAL.fg("muted")
        assert top.style == want, (p.index, sev)
    busy = next(v.index for v in diag.gpus if "busy-no-memory" in v.codes)
    panel = panel_of(diag, busy)
    rows = panel.rows(PAL, 30)
    assert panel.rows(PAL, 30) is rows  # kept while nothing it shows changed
    assert panel.pick(True) and not panel.pick(True)
    picked = panel.rows(PAL, 30)
    assert picked is not rows and picked[0].plain[0] == "╔"  # picked: double, in the accent
    assert picked[0].style == Style(color=PAL.accent)
    assert panel.show_stale(12) and not panel.show_stale(12)
    stale = panel.rows(PAL, 30)
    assert stale[0].plain.startswith("╭─ GPU") and " stale 12s " in stale[0].plain
    assert stale[0].style == PAL.fg("muted")  # greyed: no level's colour on old data
    assert all(any(s.style.dim for s in r.spans if hasattr(s.style, "dim")) for r in stale[1:3])
    assert "busy-no-memory" in Text("\n").join(stale).plain  # its labels still said


def test_a_long_line_wraps_at_a_word_and_a_too_long_word_is_folded() -> None:
    rows = fit_rows([Text("12345 python3 21.9 GiB foreign"), Text("x" * 40)], 26, 5)
    assert [r.plain.rstrip() for r in rows] == [
        "12345 python3 21.9 GiB",
        "foreign",
        "x" * 26,
        "x" * 14,
        "",
    ]
    assert all(r.cell_len == 26 for r in rows)
    # More rows than the box holds: cut, never spilling into the border.
    assert len(fit_rows([Text(f"line {i}") for i in range(9)], 26, 5)) == 5


def test_a_closing_space_past_the_width_is_dropped_not_a_letter_cut() -> None:
    """A chip's closing pad one cell past the width (a label held over an hour in a 29-cell
    column): the space goes, as Textual's wrap drops it; the label keeps its last letter."""
    chip = Text(" unexpected-activity 1h05m ", "on red")
    assert chip.cell_len == 27
    (row,) = fit_rows([chip], 26, 1)
    assert row.plain == " unexpected-activity 1h05m" and "…" not in row.plain
    (wide,) = fit_rows([Text("ab日 ")], 4, 1)  # a wide last letter keeps its place too
    assert wide.plain == "ab日" and wide.cell_len == 4


def test_a_panel_keeps_its_box_once_the_readings_its_sparklines_draw_stand() -> None:
    """The window kept is what the sparklines draw: a GPU whose utilisation moved, then
    stands, keeps its box once every cell drawn holds the standing reading (HISTORY samples),
    not after a longer window has filled behind what is drawn."""
    diag = seed_diagnosis()
    view = diag.gpus[0]
    assert view.gpu is not None
    panel = GpuPanel(view.index)
    for k in range(30):  # moving for longer than any window
        gpu = dataclasses.replace(view.gpu, util=(k * 7) % 100)
        panel.show(dataclasses.replace(view, gpu=gpu), diag.time, run_active=True)
    steady = dataclasses.replace(view, gpu=dataclasses.replace(view.gpu, util=50))
    for _ in range(HISTORY):
        panel.show(steady, diag.time, run_active=True)
    rows = panel.rows(PAL, 30)
    util = next(r.plain for r in rows if "util" in r.plain)
    drawn = util.rstrip(" │")[-HISTORY - 1 :]
    # Every cell of the sparkline is the standing reading's tick, and the one before is not one.
    assert len(set(drawn[1:])) == 1 and drawn[0] == " ", util
    for _ in range(5):
        panel.show(dataclasses.replace(steady), diag.time, run_active=True)
        assert panel.rows(PAL, 30) is rows


def test_in_a_labels_first_minute_a_standing_panel_is_made_again_every_ten_seconds() -> None:
    """A label that began with the app (eight idle GPUs at a run's end, a GPU the machine
    lacks) counts its first minute in tens of seconds: the box of a panel whose readings
    stand is made again when its chip says the next ten, not every second."""
    diag = seed_diagnosis()
    view = diag.gpus[0]
    t0 = diag.time
    label = dataclasses.replace(view.labels[0], since=t0, at_least=False)
    absent = dataclasses.replace(view, gpu=None, labels=(label,))
    panel = GpuPanel(view.index)
    made = []
    for k in range(HISTORY):  # the sparklines' window fills with the same reading
        panel.show(absent, t0 + k * 0.5, run_active=True)
    for k in range(22, 81):  # 11 s to 40 s, every half second
        panel.show(dataclasses.replace(absent), t0 + k * 0.5, run_active=True)
        made.append(panel.rows(PAL, 30))
    boxes = [made[0]] + [m for a, m in itertools.pairwise(made) if m is not a]
    chips = [
        f" {label.code} {n}s " in Text("\n").join(b).plain
        for b, n in zip(boxes, (10, 20, 30, 40), strict=True)
    ]
    assert len(boxes) == 4 and all(chips), [Text("\n").join(b).plain for b in boxes]


def test_a_panel_whose_readings_stand_keeps_its_box_until_a_change_or_its_next_minute() -> None:
    """A GPU in the topology the machine lacks, or an idle card: once its sparklines' window
    holds one reading, a sample that brings the same view keeps the box (the same list); a
    reading that moves, another view, or a chip's next minute makes it again."""
    diag = seed_diagnosis()
    view = diag.gpus[0]
    label = dataclasses.replace(view.labels[0], since=diag.time, at_least=False)
    absent = dataclasses.replace(view, gpu=None, labels=(label,))
    panel = GpuPanel(view.index)
    t = diag.time + 120.0  # the chip says 2m for the next minute
    for k in range(HISTORY):
        panel.show(absent, t + k * 0.5, run_active=True)
    rows = panel.rows(PAL, 30)
    assert "GPU 0 target not present" in rows[0].plain
    for k in range(HISTORY, HISTORY + 20):
        panel.show(dataclasses.replace(absent), t + k * 0.5, run_active=True)  # equal, new
        assert panel.rows(PAL, 30) is rows, k
    panel.show(absent, t + 61.0, run_active=True)  # 3m now
    later = panel.rows(PAL, 30)
    assert later is not rows and f" {label.code} 3m " in Text("\n").join(later).plain
    panel.show(absent, t + 61.5, run_active=False)  # the run ended: its chips' colours
    assert panel.rows(PAL, 30) is not later
    # A present GPU whose utilisation moves is made again every sample.
    moving = GpuPanel(view.index)
    made = []
    for k in range(HISTORY + 3):
        assert view.gpu is not None
        gpu = dataclasses.replace(view.gpu, util=(k * 7) % 100)
        moving.show(dataclasses.replace(view, gpu=gpu), t, run_active=True)
        made.append(moving.rows(PAL, 30))
    assert len({id(r) for r in made}) == len(made)
