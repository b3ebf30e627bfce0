"""``dflash-tui replay``: the same app, read-only, driven by a recording (tui/core/record)
instead of a live feed, with a time bar.

Keys: space play/pause, left/right one sample, ``[``/``]`` the previous/next event (launch,
first step, crash, restart), ``g`` go to a time (the same forms as ``--at``), ``+``/``-`` the
speed. Every panel shows the state at the sample shown and the log pane the lines up to it:
a step forward draws that sample as the live app would; any other move folds the recording
again up to the target (core ``Cursor``) and redraws the panes from that state.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.feeds import HostFeeds
from dflash_tui.app.host.gpus.panel import HISTORY
from dflash_tui.app.host.sample import SampleReady
from dflash_tui.app.screens.main import MainScreen
from dflash_tui.app.screens.timebar import TimeBar
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import LogState, Snapshot
from dflash_tui.core.base.text import terminal_safe
from dflash_tui.core.diagnosis.history import RunHistory
from dflash_tui.core.record.replay import Cursor, RecordError, Recording, parse_time

TICK = 0.1  # seconds between play steps
SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class _NoFeeds(HostFeeds):
    """A replay has no live feed: the recording is drawn by ``ReplayApp.seek``."""

    def start(self) -> None:
        pass


class ReplayScreen(MainScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "app.play", "Play/pause", priority=True),
        Binding("q", "app.quit", "Quit"),
        Binding("left", "app.step(-1)", "Step", key_display="← →", priority=True),
        Binding("right", "app.step(1)", "Step", show=False, priority=True),
        Binding("left_square_bracket", "app.jump(-1)", "Event", key_display="[ ]", priority=True),
        Binding("right_square_bracket", "app.jump(1)", "Event", show=False, priority=True),
        Binding("g", "app.goto", "Go to", priority=True),
        Binding("plus", "app.speed(1)", "Speed", key_display="+ -", show=False),
        Binding("minus", "app.speed(-1)", "Slower", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield TimeBar()
        yield from super().compose()


class GotoScreen(ModalScreen[str | None]):
    """Asks for a time: ISO-8601, epoch seconds, +90s from the start, -10s from the end."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Cancel")]
    DEFAULT_CSS = "GotoScreen { align: center middle; } GotoScreen Input { width: 60; }"

    def compose(self) -> ComposeResult:
        yield Input(placeholder="time: +90s, -10s, 2026-12-03T07:00:05Z or epoch", id="goto")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


class ReplayApp(DflashApp):
    TITLE = "dflash-tui replay"

    def __init__(
        self,
        rec: Recording,
        *,
        at: float | None = None,
        speed: float = 1.0,
        theme: str | None = None,
    ) -> None:
        super().__init__(Config(hosts=(rec.host(),), read_only=True, theme=theme), source=None)
        self.feeds = _NoFeeds(self)
        self.rec, self.cursor = rec, Cursor(rec)
        self.start_index = rec.index_at(at) if at is not None else 0
        self._ticker: Timer | None = None  # the play steps; paused while not playing
        self.playing, self.speed = False, speed
        self.clock = 0.0  # the recording's time while playing
        self.last_tick = time.monotonic()

    def get_default_screen(self) -> ReplayScreen:
        return ReplayScreen([s.key for s in self.host_states], True, self.apply_filter)

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(lambda: self.seek(self.start_index))
        self._ticker = self.set_interval(TICK, self._tick, pause=not self.playing)
        for note in self.rec.notes:
            self.notify(note, title="recording", severity="warning", timeout=15)

    def quit_note(self) -> str:
        return ""  # nothing of a recording keeps running

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The time bar's keys are priority bindings: while a text box (the log filter) has
        # focus, left/right/space/g belong to it, not to the recording.
        if action in ("step", "jump", "play", "goto") and isinstance(self.focused, Input):
            return False
        return super().check_action(action, parameters)

    # -- keys --

    def action_play(self) -> None:
        self.playing = not self.playing
        self.clock, self.last_tick = self.cursor.snap.time, time.monotonic()
        if self.playing and self.cursor.index >= len(self.rec.samples) - 1:
            self.seek(0)  # at the end, play starts again from the start
        self._bar()

    def action_step(self, delta: int) -> None:
        self.playing = False
        self.seek(self.cursor.index + delta)

    def action_jump(self, direction: int) -> None:
        self.playing = False
        here, marks = self.cursor.index, self.rec.jumps()
        ahead = [i for i in marks if i > here] if direction > 0 else [i for i in marks if i < here]
        if not ahead:
            self.notify("no event further that way", timeout=3)
            return
        self.seek(ahead[0] if direction > 0 else ahead[-1])

    def action_goto(self) -> None:
        def done(text: str | None) -> None:
            if not text:
                return
            try:
                t = parse_time(text, self.rec)
            except RecordError as exc:
                self.notify(str(exc), severity="error", timeout=6)
                return
            self.playing = False
            self.seek(self.rec.index_at(t))

        self.push_screen(GotoScreen(), done)

    @property
    def playing(self) -> bool:
        return self._playing

    @playing.setter
    def playing(self, on: bool) -> None:
        """Playing or not; the step timer runs only while playing (a paused replay wakes
        nothing)."""
        self._playing = on
        if self._ticker is not None:
            if on:
                self._ticker.resume()
            else:
                self._ticker.pause()

    def action_speed(self, direction: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
        self.speed = SPEEDS[min(max(i + direction, 0), len(SPEEDS) - 1)]
        self._bar()

    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self.last_tick = now - self.last_tick, now
        if not self.playing:
            return
        self.clock += elapsed * self.speed
        target = self.rec.index_at(self.clock)
        if target > self.cursor.index:
            self.seek(target)
        if self.cursor.index >= len(self.rec.samples) - 1:
            self.playing = False
            self._bar()

    # -- drawing a moment --

    def seek(self, index: int) -> None:
        index = min(max(index, 0), len(self.rec.samples) - 1)
        step = index == self.cursor.index + 1
        if index == self.cursor.index and index >= 0:
            self._bar()
            return
        diag = self.cursor.seek(index)
        state = self.host_states[0]
        # A recorded sample is as old as the moment it shows, never stale: without its probe
        # interval the header, panels and findings do not count a paused replay's age.
        snap, events = replace(self.cursor.snap, interval=None), tuple(self.cursor.new_events)
        diag = replace(diag, interval=None)
        if not step:
            self._reset_panes()
            snap = replace(snap, logs=tuple(self._logs_so_far(snap)))
        tracker = self.cursor.tracker
        msg = SampleReady(state.key, snap, diag, tracker.progress, tuple(tracker.metrics)[-200:],
                          events)  # fmt: skip
        self.feeds.sample_ready(state, msg)
        self._bar()

    def _logs_so_far(self, snap: Snapshot) -> list[LogState]:
        out = []
        for log in snap.logs:
            items = self.cursor.lines.get(log.path, ())
            lines = [text for gap, text in items if not gap]
            gaps, n = [], 0
            for gap, text in items:
                if gap:
                    gaps.append((n, text))
                else:
                    n += 1
            out.append(replace(log, lines=tuple(lines), gaps=tuple(gaps), truncated=False))
        return out

    def _reset_panes(self) -> None:
        """Forget what the panes accumulated (lines, events, sparklines) before a jump."""
        pane = self.pane_of(self.host_states[0])
        if pane is None:
            return
        kept = pane.store
        kept.logs.clear()
        # The events before this sample; its own come with it (a crash toasts on landing).
        everything = list(self.cursor.timeline.events)
        kept.events = everything[: len(everything) - len(self.cursor.new_events)]
        # The History tab folds what each sample adds: after a jump, fold the samples before
        # this one again (this one comes with its SampleReady).
        kept.history = RunHistory()
        for s in self.rec.samples[: self.cursor.index]:
            kept.history.add(s.snap)
        recent = self.rec.samples[max(self.cursor.index - HISTORY, 0) : self.cursor.index]
        for index, panel in kept.panels.items():
            panel.forget()
            for s in recent:
                panel.remember(next((g for g in s.snap.gpus if g.index == index), None))

    def _bar(self) -> None:
        screen = self.main_screen()
        if screen is None:
            return
        screen.query_one(TimeBar).show(self.rec, self.cursor.index, self.playing, self.speed)


REPLAY_INSTEAD = "`dflash-tui status --replay DIR --at TIME` (add --json for the document)"


def run_replay_app(rec: Recording, at: float | None, speed: float, theme: str | None) -> int:
    from dflash_tui.app.terminal import terminal_problem

    problem = terminal_problem(instead=REPLAY_INSTEAD)  # the live app's check and words
    if problem:
        print(problem, file=sys.stderr)
        return 2
    app = ReplayApp(rec, at=at, speed=speed, theme=theme)
    app.run()
    for note in rec.notes:
        print(terminal_safe(f"dflash-tui replay: note: {note}"))
    return 0
