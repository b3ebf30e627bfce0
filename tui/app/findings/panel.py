"""The findings list (what is wrong, why, what next) and the event timeline."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from dflash_tui.app.palette import Palette, palette_for
from dflash_tui.app.widgets import redraw_guarded
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.finding import Finding, duration
from dflash_tui.core.diagnosis.timeline import MAX_EVENTS, Event

_BADGE = {"error": " ERROR ", "warning": " WARN  ", "info": " INFO  "}


class _TextScroll(VerticalScroll, can_focus=True):
    """A focusable scrolling area holding one Static of Rich Text (never markup)."""

    DEFAULT_CSS = """
    _TextScroll { height: 1fr; scrollbar-size-vertical: 1; padding: 0 1; }
    _TextScroll > Static { width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(self.empty_text(), classes="body")

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda _t: redraw_guarded(self, self.redraw), init=False)

    def empty_text(self) -> str:
        return ""

    def set_text(self, text: Text) -> None:
        self.query_one(".body", Static).update(text)

    def redraw(self) -> None:  # overridden
        pass

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)


class FindingsList(_TextScroll):
    """Findings, worst first, each with its severity spelled out."""

    def __init__(self) -> None:
        super().__init__(id="findings")
        self.findings: tuple[Finding, ...] | None = None  # None: nothing shown yet
        self.note: str | None = None  # connection trouble, shown above the findings
        self.stale_s: int | None = None  # the findings are this old (no sample since)
        self.down = False  # the link is down: whatever is shown, nothing is called OK

    def empty_text(self) -> str:
        return "waiting for the first sample …"

    def show(self, findings: Sequence[Finding], note: str | None = None) -> None:
        if tuple(findings) != self.findings or note != self.note:
            self.findings, self.note = tuple(findings), note
            self.redraw()

    def show_stale(self, age: int | None, down: bool = False) -> None:
        """No sample for ``age`` seconds (None: fresh); ``down``: the link is down."""
        if (age, down) != (self.stale_s, self.down):
            self.stale_s, self.down = age, down
            self.redraw()

    def redraw(self) -> None:
        pal = self.palette
        t = Text()
        if self.note:
            t.append(" LINK  ", pal.chip("error"))
            t.append(f" {safe_label(self.note, 400)}\n", pal.fg("error"))
        if self.stale_s is not None:
            t.append(" STALE ", pal.chip("warning"))
            t.append(
                f" last sample {duration(self.stale_s)} ago: what follows is what it showed; "
                "nothing is judged until samples come again.\n",
                pal.fg("warning"),
            )
            if not self.findings:
                t.append("no finding in that sample; the host's health now is unknown.")
        elif self.down and not self.findings:
            t.append("no sample yet: nothing is known about this host.")
        elif not self.findings:
            t.append(" OK    ", pal.chip("ok"))
            t.append(" nothing wrong: every GPU does what the topology expects.")
        for i, f in enumerate(self.findings or ()):
            if i:
                t.append("\n")
            t.append(_BADGE.get(f.severity, " INFO  "), pal.chip(f.severity))
            t.append(f" {f.code}", pal.fg(f.severity, bold=True))
            if f.gpus:
                t.append(f"  GPU {','.join(str(g) for g in f.gpus)}", pal.fg("muted"))
            t.append(f"\n{safe_label(f.message, 2000)}")
            if key := self.key_for(f.action):
                t.append(f" (press {key})", pal.fg("muted"))
            t.append("\n")
        self.set_text(t)

    def key_for(self, action: str | None) -> str | None:
        """The key of a finding's next step (its words name none), unless keys cannot do it
        (--read-only hides every destructive action)."""
        if action is None or getattr(self.app, "read_only", False):
            return None
        for b in getattr(self.screen, "BINDINGS", ()):
            if isinstance(b, Binding) and b.action == f"app.{action}":
                return b.key_display or b.key
        return None


class TimelineList(_TextScroll):
    """Events, oldest first, newest at the bottom (scrolled into view)."""

    def __init__(self) -> None:
        super().__init__(id="timeline")
        self.events: list[Event] = []

    def empty_text(self) -> str:
        return "no events yet"

    def add(self, events: Sequence[Event]) -> None:
        if events:
            self.events = (self.events + list(events))[-MAX_EVENTS:]
            self.redraw()
            self.scroll_end(animate=False)

    def redraw(self) -> None:
        pal = self.palette
        t = Text()
        for ev in self.events:
            clock = time.strftime("%H:%M:%S", time.localtime(ev.time))
            t.append(f"{clock} ", pal.fg("muted"))
            t.append(f"{ev.kind:<12}", pal.fg(ev.severity if ev.severity != "info" else "ok"))
            t.append(f" {safe_label(ev.text, 300)}\n")
        t.rstrip()
        self.set_text(t if self.events else Text(self.empty_text()))
