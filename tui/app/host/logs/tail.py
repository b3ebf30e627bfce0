"""One log tail: a title with the file's state, the missing-file notice, and the lines.

Lines land in a LineStore at once and reach the Log widget only when the owner calls
``flush`` (about 20 times a second), in one ``write_lines`` call: a flood costs one redraw per
tick instead of one per line. The Log widget never parses markup; lines are sanitised first.
"""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from dflash_tui.app.host.logs.lines import ERROR_RE, MAX_LINES
from dflash_tui.app.host.logs.search import SearchState, hscroll_label, wrapped
from dflash_tui.app.host.logs.widget import TailLog
from dflash_tui.app.host.store import TailData
from dflash_tui.app.widgets.palette import Palette, palette_for
from dflash_tui.app.widgets.themed import follow_theme, show_changed, unfollow_theme
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.finding import duration


class ErrorHighlighter(Highlighter):
    """Colours whole lines that report an error, an exception or a traceback frame."""

    def __init__(self) -> None:
        self.style = Style(color="red", bold=True)
        self.search: re.Pattern[str] | None = None  # `s`: every match is marked too
        self.match_style = Style(reverse=True, bold=True)

    def highlight(self, text: Text) -> None:
        if ERROR_RE.search(text.plain):
            text.stylize(self.style)
        if self.search is not None:
            for m in self.search.finditer(text.plain):
                if m.end() > m.start():
                    text.stylize(self.match_style, m.start(), m.end())


class LogTail(Vertical):
    DEFAULT_CSS = """
    LogTail {
        height: 1fr;
        min-height: 4;
        .tail-title {
            height: 1; background: $panel; color: $text; padding: 0 1;
            text-wrap: nowrap; text-overflow: ellipsis;
        }
        .tail-missing { height: auto; color: $text-warning; padding: 0 1; display: none; }
        &.-missing .tail-missing { display: block; }
        .tail-hidden { height: auto; max-height: 3; padding: 0 1; display: none; }
        &.-hiding .tail-hidden { display: block; }
        TailLog { height: 1fr; scrollbar-size-vertical: 1; }
        &.-focused .tail-title { background: $accent 50%; text-style: bold; }
    }
    """

    def __init__(self, data: TailData, tail_id: str) -> None:
        """``data``: the log's lines and file state, kept by the host's store whether this
        tail is shown or not (tui/app/host/store.py)."""
        super().__init__(id=tail_id, classes="log-tail")
        self.data = data
        self.follow = True
        self.highlighter = ErrorHighlighter()
        # Following is ours (flush scrolls to the end), never Log's own auto_scroll.
        self.log_view = TailLog(max_lines=MAX_LINES, highlight=True, auto_scroll=False)
        self.log_view.highlighter = self.highlighter
        self.title_bar = Static(classes="tail-title")
        self.missing_bar = Static(classes="tail-missing")
        self.hidden_bar = Static(classes="tail-hidden")  # inside the pane: a title can be cut
        self.search = SearchState()
        self.wrap = False  # `W`: long lines cut into rows of the pane's width
        self.wrap_width = 0  # the width the lines shown were cut to
        # Where a paused tail was scrolled when its pane's widgets were removed (x, y): this
        # tail, made again, scrolls there once its lines are drawn.
        self.scroll_back: tuple[float, float] | None = None

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.missing_bar
        yield self.log_view
        yield self.hidden_bar

    def on_mount(self) -> None:
        follow_theme(self, lambda: self.redraw())  # looked up at each change
        # is_mounted is only true once every Mount handler ran: draw the first sample after.
        self.call_after_refresh(self.redraw)
        # Lines wider than the pane: the title says they are cut, or how far they are scrolled.
        self.watch(self.log_view, "scroll_x", lambda _x: self._retitle(), init=False)
        self.watch(self.log_view, "virtual_size", lambda _s: self._retitle(), init=False)

    def on_tail_log_resized(self, msg: TailLog.Resized) -> None:
        msg.stop()
        self._retitle()  # laid out, or wider or narrower: other lines are cut

    def on_unmount(self) -> None:
        unfollow_theme(self)

    # The title bar shows the focus through a class: Textual does not restyle a sibling of
    # the focused log on ``:focus-within``, so the bar stayed as it was.
    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self.add_class("-focused")

    def on_descendant_blur(self, _event: events.DescendantBlur) -> None:
        self.remove_class("-focused")

    class Resized(Message):
        """The tail's size changed (another tail came or went, the filter or search box
        opened): a following tail is off its end until the next flush."""

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    @property
    def waiting(self) -> bool:
        """Something is left to draw: lines since the last flush, a widget not up yet, or a
        following tail not at its end (its size settled after the write)."""
        view = self.log_view
        if self.data.store.pending or not view.is_mounted:
            return True
        return self.follow and not view.is_vertical_scroll_end

    def flush(self) -> None:
        """Draw the lines that arrived since the last flush (one batched write)."""
        if not self.log_view.is_mounted:
            return  # lines wait in the store until the widget exists
        self.data.store.quiet = False  # drawn from now on: an overflow is a gap on screen
        if self.wrap and self._text_width() != self.wrap_width:
            self.wrap_width = self._text_width()  # the pane's width changed: cut again
            self.set_filter(self.data.store.pattern)
            return
        pending = self.data.store.take_pending()
        if pending and self.wrap:
            pending = wrapped(pending, self.wrap_width)
        if pending:
            # Log scrolls on its own only when it was at its end before the write; after a
            # clear (a filter change) its old offset is past the end and it would stay there.
            self.log_view.write_lines(pending, scroll_end=False)
            if self.search.pattern is not None:
                self.search.update(self.log_view.lines)
                self._retitle()
        if self.follow and not self.log_view.is_vertical_scroll_end:
            self.log_view.scroll_end(animate=False, immediate=True, x_axis=False)
        elif pending and self.scroll_back is not None and not self.follow:
            x, y = self.scroll_back
            self.scroll_back = None
            self.log_view.scroll_to(x, y, animate=False, immediate=True)

    def keep(self) -> tuple[float, float] | None:
        """Its pane's widgets are being removed: the lines it shows go back to the store (a
        tail made again draws only what the store has not drawn), and where a paused tail is
        scrolled (None: following, or nothing drawn). Wrapped, the rows kept are cut at this
        width: the new tail cuts the store's lines again if its width differs, as a resize
        does."""
        drawn = self.log_view.lines if self.log_view.is_mounted else ()
        cut = self.data.store.undraw(drawn)
        if self.follow or not drawn:
            return None
        x, y = self.log_view.scroll_x, self.log_view.scroll_y
        if cut:  # the rows before it went, a mark says so: the same row, or the mark if gone
            y = y - cut + 1 if y >= cut else 0
        return x, y

    def set_filter(self, pattern: re.Pattern[str] | None) -> None:
        lines = self.data.store.set_filter(pattern)
        self.data.store.pending.extend(lines)
        if self.log_view.is_mounted:
            self.log_view.clear()
            self.flush()
            self.search.update(self.log_view.lines)
            # The old offset means nothing in the new lines: a paused tail shows their end.
            self.log_view.scroll_end(animate=False, immediate=True, x_axis=False)
            self.redraw()

    def set_follow(self, follow: bool) -> None:
        self.follow = follow
        if follow and self.log_view.is_mounted:
            self.log_view.scroll_end(animate=False)
        self.redraw()

    def set_wrap(self, wrap: bool) -> None:
        """Wrap long lines (cut at the pane's width) on/off; the lines shown are drawn again."""
        self.wrap = wrap
        self.wrap_width = self._text_width() if wrap else 0
        self.set_filter(self.data.store.pattern)

    def _text_width(self) -> int:
        # One column for the scrollbar, whether it shows yet or not: no cut again when it comes.
        return max(0, self.log_view.size.width - 1)

    def set_search(self, pattern: re.Pattern[str] | None) -> None:
        """Mark and count the lines shown that match ``pattern`` (None: no search)."""
        self.search.pattern, self.search.at = pattern, -1
        self.highlighter.search = pattern
        self.search.update(self.log_view.lines)
        self.log_view.refresh()
        self._retitle()

    def jump(self, forward: bool) -> int | None:
        """Scroll to the next (previous) match, a few lines below the top; None if none."""
        line = self.search.step(forward, int(self.log_view.scroll_y))
        if line is not None:
            y = max(0, line - self.log_view.size.height // 3)
            self.log_view.scroll_to(y=y, animate=False, immediate=True)
        self._retitle()
        return line

    def _retitle(self) -> None:
        if self.is_mounted:
            show_changed(self.title_bar, self._title(palette_for(self.app.current_theme)))

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        pal = palette_for(self.app.current_theme)
        style = pal.fg("error", bold=True)
        if style != self.highlighter.style:  # a theme change: the lines' colours
            self.highlighter.style = style
            self.log_view.refresh()
        show_changed(self.title_bar, self._title(pal))
        missing = self.data.missing_from is not None
        self.set_class(missing, "-missing")
        if missing:
            show_changed(self.missing_bar, self._missing_text(pal))
        # Said inside the pane (the title can be cut): what the filter hides, and a pause.
        hiding = self.data.store.pattern is not None and self.data.store.hidden > 0
        self.set_class(hiding or not self.follow, "-hiding")
        if hiding or not self.follow:
            show_changed(self.hidden_bar, self._hidden_text(pal))

    def _title(self, pal: Palette) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("run log " if self.data.is_run_log else "log ", pal.fg("info", bold=True))
        t.append(_short_path(self.data.path))
        # Before the rest: a narrow pane cuts the title at the right.
        found = self.search.label()
        if found:
            t.append(f"  {found} (n N)", pal.fg("info", bold=True))
        view = self.log_view
        # Before its first layout a view has no width, and Textual's scroll range is not yet
        # its own: nothing is cut until there are lines and a width to cut them at.
        laid_out = view.line_count > 0 and view.size.width > 0
        cut = hscroll_label(view.scroll_x, view.max_scroll_x) if laid_out else ""
        if cut:
            t.append(f"  {cut}", pal.fg("warning"))
        v = self.data.view
        if v is not None and not v.exists:
            t.append("  MISSING", pal.fg("error", bold=True))
        elif v is not None and v.size is not None:
            t.append(f"  {v.size:,} B", pal.fg("muted"))
        st = self.data.store
        if st.pattern is None:
            t.append("  all lines", pal.fg("muted"))
        else:  # say how much the filter hides, so an empty tail is never a mystery
            t.append(f"  filter: {st.shown:,} of {st.received:,} lines (a: all)", pal.fg("muted"))
        t.append(
            "  follow" if self.follow else "  paused", pal.fg("ok" if self.follow else "warning")
        )
        if st.dropped:
            t.append(f"  {st.dropped:,} skipped (flood)", pal.fg("warning"))
        return t

    def _hidden_text(self, pal: Palette) -> Text:
        """How many lines the filter hides; when it hides every one, the last of them too
        (a failed launch's only line must never look like an empty log)."""
        st = self.data.store
        n = st.hidden if st.pattern is not None else 0
        t = Text(no_wrap=True, overflow="ellipsis")
        said = []
        if not self.follow:
            said.append("paused: new lines are not scrolled to (f: follow)")
        if n:
            said.append(f"{n:,} line{'s' if n != 1 else ''} hidden by the filter (a: all)")
        t.append("┄ " + "; ".join(said), pal.fg("warning"))
        if n and st.shown == 0 and st.lines:  # nothing on screen: show what there is
            t.append("; the last one:\n", pal.fg("warning"))
            t.append(st.lines[-1])  # already sanitised by the store
        return t

    def _missing_text(self, pal: Palette) -> Text:
        since = self.data.missing_from if self.data.missing_from is not None else self.data.now
        how_long = duration(self.data.now - since)
        t = Text()
        t.append(" MISSING ", pal.chip("error"))
        bound = "at least " if self.data.missing_at_least else ""
        t.append(f" the file does not exist (missing for {bound}{how_long})", pal.fg("error"))
        if self.data.view is not None and self.data.view.error:
            t.append(f": {safe_label(self.data.view.error)}", pal.fg("muted"))
        return t


def _short_path(path: str, keep: int = 48) -> str:
    """The end of a long path is what tells runs apart: cut from the left."""
    clean = safe_label(path, 400)
    return clean if len(clean) <= keep else "…" + clean[-(keep - 1) :]
