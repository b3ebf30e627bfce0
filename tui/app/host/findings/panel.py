"""The findings list (what is wrong, why, what next) and the event timeline."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import Click
from textual.geometry import Region
from textual.message import Message
from textual.widget import Widget

from dflash_tui.app.host.store import PaneStore
from dflash_tui.app.keys.keymap import key_text
from dflash_tui.app.keys.table import app_action
from dflash_tui.app.widgets.palette import Palette, palette_for
from dflash_tui.app.widgets.rows import RowStatic
from dflash_tui.app.widgets.themed import follow_theme, unfollow_theme
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.finding import Finding, duration
from dflash_tui.core.diagnosis.timeline import Event

_BADGE = {"error": " ERROR ", "warning": " WARN  ", "info": " INFO  "}


class _TextScroll(VerticalScroll, can_focus=True):
    """A focusable scrolling area holding one Rich Text (never markup), drawn row by row: a
    finding whose words changed (the memory a foreign process holds) repaints its rows."""

    DEFAULT_CSS = """
    _TextScroll { height: 1fr; scrollbar-size-vertical: 1; padding: 0 1; }
    _TextScroll > RowStatic { width: 1fr; height: auto; }
    """

    def compose(self) -> ComposeResult:
        body = RowStatic(classes="body")
        body.set_reactive(Widget.auto_links, False)  # no links to style (see Themed)
        body.show_rows([Text(self.empty_text())])
        yield body

    def on_mount(self) -> None:
        follow_theme(self, lambda: self.redraw())  # looked up at each change

    def on_unmount(self) -> None:
        unfollow_theme(self)

    def empty_text(self) -> str:
        return ""

    def set_text(self, text: Text) -> None:
        # Static's rows: a line each, the blank one after a closing newline included.
        self.query_one(".body", RowStatic).show_rows(list(text.split("\n", allow_blank=True)))

    def redraw(self) -> None:  # overridden
        pass

    @property
    def palette(self) -> Palette:
        return palette_for(self.app.current_theme)


class FindingsList(_TextScroll):
    """Findings, worst first, each with its severity spelled out. With the focus, up/down
    pick one (marked ``▶``); enter or a click posts ``Picked``: its host's pane shows the GPUs
    or selects the process it names."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Previous finding", show=False),
        Binding("down", "move(1)", "Next finding", show=False),
        Binding("enter", "pick", "Go to its GPU / PID"),
    ]

    class Picked(Message):
        """A finding was entered: show what it names."""

        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self) -> None:
        super().__init__(id="findings")
        self.findings: tuple[Finding, ...] | None = None  # None: nothing shown yet
        self.note: str | None = None  # connection trouble, shown above the findings
        self.stale_s: int | None = None  # the findings are this old (no sample since)
        self.down = False  # the link is down: whatever is shown, nothing is called OK
        self.cursor = 0  # the finding enter acts on

    def empty_text(self) -> str:
        return "waiting for the first sample …"

    def show(self, findings: Sequence[Finding], note: str | None = None) -> None:
        if tuple(findings) != self.findings or note != self.note:
            old = self.findings[self.cursor] if self.findings else None
            self.findings, self.note = tuple(findings), note
            # The cursor stays on the same finding when it is still there.
            self.cursor = self.findings.index(old) if old in self.findings else 0
            self.redraw()

    def show_stale(self, age: int | None, down: bool = False) -> None:
        """No sample for ``age`` seconds (None: fresh); ``down``: the link is down."""
        if (age, down) != (self.stale_s, self.down):
            self.stale_s, self.down = age, down
            self.redraw()

    def on_focus(self) -> None:
        self.call_after_refresh(self.redraw)  # has_focus is set by then (the cursor mark)

    def on_blur(self) -> None:
        self.call_after_refresh(self.redraw)

    def action_move(self, by: int) -> None:
        if self.findings:
            self.cursor = max(0, min(len(self.findings) - 1, self.cursor + by))
            self.redraw()
            first, last = self._span(self.cursor)
            self.scroll_to_region(Region(0, first, 1, last - first), animate=False)

    def action_pick(self) -> None:
        if self.findings:
            self.post_message(self.Picked(self.findings[self.cursor]))

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset_capture(self.query_one(".body", RowStatic))
        for i in range(len(self.findings or ())):
            first, last = self._span(i)
            if first <= offset.y < last:
                self.cursor = i
                self.redraw()
                self.action_pick()
                return

    def _span(self, index: int) -> tuple[int, int]:
        """The lines [first, last) finding ``index`` takes, as wrapped at the current width."""
        width = max(1, self.query_one(".body", RowStatic).content_size.width)
        console = self.app.console

        def lines(t: Text) -> int:
            return len(t.wrap(console, width)) if t.plain else 0

        parts = self._parts()
        first = lines(parts[0]) + sum(lines(b) for b in parts[1 : index + 1])
        return first, first + lines(parts[index + 1])

    def redraw(self) -> None:
        t = Text()
        for part in self._parts():
            t.append_text(part)
        self.set_text(t)

    def _parts(self) -> list[Text]:
        """The head (link, staleness, or OK), then one block per finding."""
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
        parts = [t]
        for i, f in enumerate(self.findings or ()):
            b = Text("\n" if i else "")
            picked = self.has_focus and i == self.cursor
            b.append("▶" if picked else "", pal.fg("info", bold=True))
            b.append(_BADGE.get(f.severity, " INFO  "), pal.chip(f.severity))
            b.append(f" {f.code}", pal.fg(f.severity, bold=True))
            if f.gpus:
                b.append(f"  GPU {','.join(str(g) for g in f.gpus)}", pal.fg("muted"))
            b.append(f"\n{safe_label(f.message, 2000)}")
            # A host that cannot be reached takes no key: no hint that cannot work.
            if not (self.down or self.note) and (key := self.key_for(f.action)):
                b.append(f" (press {key})", pal.fg("muted"))
            b.append("\n")
            parts.append(b)
        return parts

    def key_for(self, action: str | None) -> str | None:
        """The key of a finding's next step (its words name none), unless keys cannot do it
        (--read-only hides every destructive action)."""
        if action is None or getattr(self.app, "read_only", False):
            return None
        user = getattr(self.app, "user_keys", {})  # the config's [keys] (tui/app/keys/keymap.py)
        for b in getattr(self.screen, "BINDINGS", ()):
            if isinstance(b, Binding) and b.action == app_action(action):
                return key_text(user, b.id, b.key_display or b.key) if b.id else b.key
        return None


class TimelineList(_TextScroll):
    """Events, oldest first, newest at the bottom (scrolled into view)."""

    def __init__(self, kept: PaneStore) -> None:
        """``kept``: the host's store, which keeps its events whether this list is shown or
        not (tui/app/host/store.py)."""
        super().__init__(id="timeline")
        self.kept = kept
        self.drawn: list[Event] | None = None  # the events drawn last

    @property
    def events(self) -> list[Event]:
        return self.kept.events

    def empty_text(self) -> str:
        return "no events yet"

    def sync(self) -> None:
        """Draw the store's events if they changed since the last draw, newest in view."""
        if self.drawn is not self.kept.events:
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
        self.drawn = self.kept.events
        self.set_text(t if self.events else Text(self.empty_text()))
