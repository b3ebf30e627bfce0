"""The host overview (shown with two or more hosts): one row per host with its link, run state
and id, healthy target x/N and drafter y/M, and its worst finding with how many; the host whose
details are shown is highlighted. Each job across hosts (config ``job = "..."``) follows as one
row: its state and each member's (``job_text``). A click on a host's row posts
``HostOverview.Picked``: the app shows that host."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from dflash_tui.app.host.header import HEALTH_COLOUR
from dflash_tui.app.host.no_job import NO_JOB_SHORT
from dflash_tui.app.host.state import HostSummary
from dflash_tui.app.widgets.palette import Palette
from dflash_tui.app.widgets.themed import Themed, show_changed
from dflash_tui.core.base.text import safe_label, terminal_safe
from dflash_tui.core.diagnosis.job import MemberView, job_state, member_text
from dflash_tui.core.diagnosis.severity import RUN_STATE

LABEL_WIDTH = 18  # at most; the column is as wide as the longest host label
STATE_WIDTH = 15  # " LAUNCH-FAILED " fits
BADGE = {"error": "ERROR", "warning": "WARN", "info": "INFO"}


class HostOverview(Static, Themed):
    DEFAULT_CSS = """
    HostOverview {
        height: auto; max-height: 9; background: $boost; padding: 0 1;
        text-wrap: nowrap; text-overflow: ellipsis; overflow-y: auto;
    }
    """

    @dataclass
    class Picked(Message):
        """The row of host ``index`` was clicked."""

        index: int

    def __init__(self) -> None:
        super().__init__(id="overview")
        self.rows: tuple[HostSummary, ...] = ()
        self.jobs: tuple[tuple[str, tuple[MemberView, ...]], ...] = ()
        self.selected = 0

    def on_mount(self) -> None:
        self.redraw()

    def show(
        self,
        rows: Sequence[HostSummary],
        selected: int,
        jobs: Sequence[tuple[str, Sequence[MemberView]]] = (),
    ) -> None:
        shown = (tuple(rows), selected, tuple((name, tuple(m)) for name, m in jobs))
        if shown == (self.rows, self.selected, self.jobs):
            return  # every row as drawn: no Text built again (a sample rarely changes one)
        self.rows, self.selected, self.jobs = shown
        self.redraw()

    def redraw(self) -> None:
        pal = self.palette
        t = Text(no_wrap=True, overflow="ellipsis")
        width = min(LABEL_WIDTH, max((len(r.key) for r in self.rows), default=1))
        for i, row in enumerate(self.rows):
            if i:
                t.append("\n")
            _row(t, i, row, i == self.selected, pal, width)
        for name, members in self.jobs:  # after the hosts: a click's row stays a host's index
            t.append("\n")
            t.append_text(job_text(name, members, pal))
        show_changed(self, t)

    def row_text(self, index: int) -> str:
        """The plain text of one row (tests read it)."""
        lines = str(self.render()).split("\n")
        return lines[index] if index < len(lines) else ""

    def on_click(self, event: Click) -> None:
        row = event.y + int(self.scroll_y)
        if 0 <= row < len(self.rows):
            self.post_message(self.Picked(row))


def _row(t: Text, i: int, row: HostSummary, selected: bool, pal: Palette, width: int) -> None:
    mark = Style(reverse=True, bold=True) if selected else Style(bold=True)
    t.append("▶ " if selected else "  ", pal.fg("info", bold=True))
    t.append(f"{i + 1} {safe_label(row.key, width):<{width}}", mark)
    t.append(" ")
    _link(t, row, pal)
    word, severity = row.chip
    state = f" {word} "
    t.append(state, pal.chip(severity))
    t.append(" " * max(1, STATE_WIDTH + 1 - len(state)))
    t.append(f"{safe_label(row.run_id or '-', 22):<20} ", pal.fg("muted"))
    for role, health in (("target", row.target), ("drafter", row.drafter)):
        t.append(f"{role} ")
        if health is None:
            t.append("?/? ", pal.fg("muted"))
        else:
            text, level = health  # the header's and status's words: ``?/5 unread``
            t.append(text, pal.fg(HEALTH_COLOUR[level], bold=True))
            t.append(" ")
    _findings(t, row, pal)


def _link(t: Text, row: HostSummary, pal: Palette) -> None:
    """16 columns: ``● connected``, ``○ connecting …``, ``● DOWN retry 4s``, ``○ no job here``
    (a Slurm node host while its job holds no node for it)."""
    if row.link == "connected":
        t.append(f"{'● connected':<17}", pal.fg("ok", bold=True))
    elif row.link == "idle":
        t.append(f"{'○ ' + NO_JOB_SHORT:<17}", pal.fg("muted"))
    elif row.link == "down":
        t.append("● DOWN", pal.fg("error", bold=True))
        t.append(f" {row.link_note:<10}", pal.fg("error"))
    else:
        t.append(f"{'○ connecting …':<17}", pal.fg("warning"))


def _findings(t: Text, row: HostSummary, pal: Palette) -> None:
    if row.target is None:
        return  # no sample yet: nothing known
    if row.worst is None:
        t.append(" OK ", pal.chip("ok"))
        t.append(" no findings", pal.fg("muted"))
        return
    t.append(f" {BADGE.get(row.worst, row.worst)} ×{row.worst_count} ", pal.chip(row.worst))
    t.append(f" of {row.findings} finding{'s' if row.findings != 1 else ''}", pal.fg("muted"))


def job_text(name: str, members: Sequence[MemberView], pal: Palette) -> Text:
    """One job's row: ``  job NAME`` and its state chip, then each member's state and step."""
    state = job_state([m.state for m in members])
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"  job {safe_label(name, LABEL_WIDTH)} ", Style(bold=True))
    t.append(f" {state.upper()} ", pal.chip(RUN_STATE.get(state, "info")))
    t.append(f" {len(members)} nodes: ", pal.fg("muted"))
    for i, m in enumerate(members):
        if i:
            t.append(" · ", pal.fg("muted"))
        # labels are the config's, states our words: made safe all the same
        t.append(terminal_safe(member_text(m)), pal.fg(RUN_STATE.get(m.state, "info")))
    return t
