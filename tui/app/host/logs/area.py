"""All log tails, the run's log first, with the shared filter and follow mode.

A 20 Hz timer flushes every tail's pending lines in one batched write, so a flood of lines
costs a bounded amount of drawing per second whatever the rate they arrive at. The timer runs
only while there is something to draw (lines waiting, a tail not mounted yet, a following tail
not at its end) and a few ticks after: a quiet log costs no wake-ups between samples.
The ticks after the write matter: a tail whose size settles in the next layout is scrolled to
its end by the next tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Input, Static

from dflash_tui.app.host.logs.lines import DEFAULT_FILTER, compile_filter
from dflash_tui.app.host.logs.search import compile_search
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.store import PaneStore, TailData
from dflash_tui.app.keys.keymap import key_text
from dflash_tui.app.widgets.boxes import open_box
from dflash_tui.app.widgets.removal import let_go_of_lines

FLUSH_INTERVAL = 0.05  # seconds: ~20 redraws a second at most, per tail
IDLE_TICKS = 10  # ticks with nothing to draw before the flush timer pauses (half a second)


@dataclass
class LogSettings:
    """What the log keys set on a host's log area, kept by its pane while the area's widgets
    are removed (tui/app/host/pane.py, ``drop``) and given to the area made again."""

    filter_text: str = DEFAULT_FILTER
    filter_on: bool = True
    follow: bool = True
    wrap: bool = False
    search_text: str = ""
    scroll: dict[str, tuple[float, float]] = field(default_factory=dict)  # paused tails, by path


class LogArea(Vertical):
    DEFAULT_CSS = """
    LogArea {
        height: 1fr;
        #log-filter { display: none; height: 3; }
        &.-filtering #log-filter { display: block; }
        #log-search { display: none; height: 3; }
        &.-searching #log-search { display: block; }
        #no-logs { color: $text-muted; padding: 0 1; }
    }
    """

    def __init__(
        self, kept: PaneStore, read_only: bool = False, settings: LogSettings | None = None
    ) -> None:
        """``kept``: the host's store, whose log data the tails draw. ``read_only``: no key
        launches anything here (a viewer, a browser tab without --allow-control, a replay),
        so the empty area names none. ``settings``: those of the area this one replaces
        (the filter's pattern itself is the store's)."""
        super().__init__(id="logs")
        self.kept = kept
        self.read_only = read_only
        self.tails: dict[str, LogTail] = {}
        was = settings or LogSettings()
        self.filter_text = was.filter_text
        self.filter_on = was.filter_on  # on at start: errors, exceptions, progress
        self.follow = was.follow
        self._next_id = 0
        self.wrap = was.wrap  # `W`: every tail wraps its long lines
        self.search_text = was.search_text  # `s`: found and marked in every tail
        self._scroll_back = dict(was.scroll)  # for the tails made again

    def keep(self) -> LogSettings:
        """The area's widgets are being removed with its pane's: every tail's lines go back
        to the store, and what the keys set is kept for the area made again. Not kept (a
        rebuilt area starts without them): an open filter or search box, the current match."""
        scroll = {}
        for path, tail in self.tails.items():
            at = tail.keep()
            if at is not None:
                scroll[path] = at
        return LogSettings(
            self.filter_text, self.filter_on, self.follow, self.wrap, self.search_text, scroll
        )

    def compose(self) -> ComposeResult:
        # The filter's and the search's boxes are made when first opened (_box).
        yield Static(self._empty_text(), id="no-logs")

    async def _box(self, box_id: str) -> None:
        """Make box ``box_id`` the first time it opens, in its place above the tails: the
        filter's first, then the search's (most sessions open neither: two Inputs fewer)."""
        if self.query(f"#{box_id}"):
            return
        if box_id == "log-filter":
            hint = "regex (enter: apply, esc: cancel)"
            box = Input(value=self.filter_text, placeholder=hint, id=box_id)
            await self.mount(box, before=0)
            return
        box = Input(placeholder="search regex (enter: find, n/N: next/previous)", id=box_id)
        filters = self.query("#log-filter")
        await self.mount(
            box, after=filters.first() if filters else None, before=None if filters else 0
        )

    def _empty_text(self) -> str:
        if self.read_only:  # read-only: launching is someone else's, and --log is the CLI's
            return "no logs watched yet: a run's log shows here once it starts"
        key = key_text(getattr(self.app, "user_keys", {}), "launch", "l")
        return f"no logs watched yet: press {key} to launch the run, or start with --log PATH"

    def on_mount(self) -> None:
        self._idle_ticks = 0
        self.flushing = True  # whether the flush timer runs (a quiet log wakes nothing)
        self._flusher = self.set_interval(FLUSH_INTERVAL, self._tick)

    def on_log_tail_resized(self, msg: LogTail.Resized) -> None:
        # A new width or height (the area's own, the filter box, a tail added): wrapped lines
        # are cut again, a following tail scrolled back to its end.
        msg.stop()
        self.wake()

    def wake(self) -> None:
        """Run the flush timer again (it pauses itself once nothing is left to draw)."""
        self._idle_ticks = 0
        if self.is_mounted and not self.flushing:
            self.flushing = True
            self._flusher.resume()

    @property
    def shown(self) -> bool:
        """Its host's pane (class ``host-pane``) is the one shown: another host's lines wait
        in their store, and its pane's sync wakes the timer when it is shown. Only the pane
        counts: an area hidden inside a shown pane (a zoom, the History tab) gets its size
        back unchanged, so no resize would wake it."""
        panes = (n for n in self.ancestors if isinstance(n, Widget) and n.has_class("host-pane"))
        return all(pane.display for pane in panes)

    def _tick(self) -> None:
        if not self.shown:  # the pane's sync wakes the timer when the host is shown again
            for tail in self.tails.values():
                tail.data.store.quiet = True  # nothing drawn until shown: no "not shown" marks
            self.flushing = False
            self._flusher.pause()
            return
        self.flush()
        if any(tail.waiting for tail in self.tails.values()):
            self._idle_ticks = 0
        else:
            self._idle_ticks += 1
            if self._idle_ticks >= IDLE_TICKS:
                self.flushing = False
                self._flusher.pause()

    def flush(self) -> None:
        for tail in self.tails.values():
            tail.flush()

    def sync(self) -> None:
        """Draw the store's logs: a tail for each new log (the run's log first), none for a
        gone one, every title and notice as the latest sample left it."""
        # Gone, or started again while hidden (a replay's jump): its tail goes.
        kept = self.kept.logs
        for path in [p for p, t in self.tails.items() if kept.get(p) is not t.data]:
            gone = self.tails.pop(path)
            let_go_of_lines(gone)  # its drawn lines (tui/app/widgets/removal.py)
            gone.remove()
        for data in self.kept.ordered_logs():
            tail = self.tails.get(data.path)
            if tail is None:
                tail = self._add_tail(data)
            tail.redraw()
        self.query_one("#no-logs", Static).display = not self.tails
        self._wake_if_waiting()
        # A tail whose height the sample changed (a missing-file notice, a tail added) is off
        # its end only once the layout is done.
        self.call_after_refresh(self._wake_if_waiting)

    def _wake_if_waiting(self) -> None:
        if any(tail.waiting for tail in self.tails.values()):
            self.wake()

    def _add_tail(self, data: TailData) -> LogTail:
        self._next_id += 1
        tail = LogTail(data, f"tail-{self._next_id}")
        tail.follow = self.follow
        tail.wrap = self.wrap
        tail.scroll_back = self._scroll_back.pop(data.path, None)
        self.tails[data.path] = tail
        existing = [t for t in self.tails.values() if t is not tail and t.is_mounted]
        if data.is_run_log and existing:
            self.mount(tail, before=existing[0])
        else:
            self.mount(tail)
        if self.search_text:
            tail.set_search(compile_search(self.search_text))
        return tail

    # -- search (`s`, then `n`/`N`; keys live on the app) --

    async def open_search(self) -> None:
        await self._box("log-search")
        open_box(self, "-searching", "log-search", self.search_text)

    def close_search(self) -> None:
        self.remove_class("-searching")

    def apply_search(self, text: str) -> None:
        """Raises ValueError for a bad regex; empty text ends the search."""
        pattern = compile_search(text) if text else None
        self.search_text = text
        for tail in self.tails.values():
            tail.set_search(pattern)
        self.wake()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "log-search":
            return
        event.stop()
        try:
            self.apply_search(event.value.strip())
        except ValueError as exc:
            self.app.notify(str(exc), severity="error")
            return
        self.close_search()
        tail = self.current_tail(None)
        if tail is not None:
            tail.log_view.focus()
            if self.search_text:
                self.jump(tail, True)

    def jump(self, tail: LogTail, forward: bool) -> None:
        """The next match in ``tail``; following pauses, or the next flush would scroll away."""
        if self.follow:
            self.toggle_follow()
        if tail.jump(forward) is None:
            self.app.notify(f"no line matches /{self.search_text}/ here", timeout=2)

    def current_tail(self, focused: object) -> LogTail | None:
        """The tail holding ``focused``, else the first (the run's log)."""
        for tail in self.tails.values():
            if focused is not None and (
                focused is tail or tail in getattr(focused, "ancestors", ())
            ):
                return tail
        return next(iter(self.tails.values()), None)

    # -- filter and follow (keys live on the app; these do the work) --

    async def open_filter(self) -> None:
        await self._box("log-filter")
        open_box(self, "-filtering", "log-filter", self.filter_text)

    def close_filter(self) -> None:
        self.remove_class("-filtering")

    def apply_filter(self, text: str) -> None:
        """Raises ValueError for a bad regex; empty text turns the filter off."""
        pattern = compile_filter(text) if text else None
        if pattern is not None:
            self.filter_text = text
        self.filter_on = pattern is not None
        self.kept.log_pattern = pattern  # a log that comes later starts with it
        for tail in self.tails.values():
            tail.set_filter(pattern)
        self.wake()

    def toggle_filter(self) -> bool:
        self.apply_filter("" if self.filter_on else self.filter_text)
        return self.filter_on

    def toggle_wrap(self) -> bool:
        self.wrap = not self.wrap
        for tail in self.tails.values():
            tail.set_wrap(self.wrap)
        self.wake()
        return self.wrap

    def toggle_follow(self) -> bool:
        self.follow = not self.follow
        for tail in self.tails.values():
            tail.set_follow(self.follow)
        self.wake()
        return self.follow
