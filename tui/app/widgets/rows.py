"""A Static drawn row by row with Textual's Line API: its content is a list of lines, each
rendered once and kept while it stays the same; a new content marks only the screen rows that
changed, so a GPU panel whose utilisation moved repaints its meter rows, not its box.

Textual's Static re-renders its whole content and repaints every row of the widget, border
included, on each ``update``: that was most of the app's CPU per sample with eight moving
panels. Here ``render_line`` hands the styles cache the kept strips (as Textual's own Log and
DataTable do), and ``refresh`` is given the changed rows only, so the compositor repaints just
those. A line that fits its row is made from ``Content.render``'s pieces; one that wraps is
made and wrapped by Textual (``Visual.to_strips``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.content import Content, Span
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual, visualize
from textual.widgets import Static

from dflash_tui.app.widgets.themed import fixed_size, same_text, same_texts

_STYLED_MAX = 1024  # Rich styles kept per widget (a few hundred are in use; ~360 B each)
_VISUAL_MAX = 256  # span styles kept converted per widget (a palette's few dozen are in use)


def _runs(rows: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Consecutive rows as (first, count): one repaint region for each run."""
    start = prev = -2
    for y in rows:
        if y != prev + 1:
            if start >= 0:
                yield start, prev - start + 1
            start = y
        prev = y
    if start >= 0:
        yield start, prev - start + 1


def changed_rows(old: Sequence[object], new: Sequence[object]) -> list[int]:
    """The rows whose strip differs from the one drawn there before (a kept line's strips
    are the same objects; a changed line that wraps may still have rows that are equal,
    segment for segment), plus the rows either side has and the other has not."""
    return [
        y
        for y in range(max(len(old), len(new)))
        if y >= len(old) or y >= len(new) or (old[y] is not new[y] and old[y] != new[y])
    ]


def _linked(text: Text) -> bool:
    """Whether a style of ``text`` may carry a link or an action (Textual styles those)."""
    for style in (text.style, *(span.style for span in text.spans)):
        if isinstance(style, str):
            if "link" in style or "@" in style:
                return True
        elif style.link or style.meta:
            return True
    return False


def at_line(
    strips: list[Strip], y: int, moved: dict[tuple[RichStyle, int], RichStyle] | None = None
) -> list[Strip]:
    """The strips of a line rendered alone (its segments say line 0) as line ``y`` of the
    whole content: Textual maps a mouse position to the text under it (where a selection
    starts and ends) by these offsets. ``moved`` keeps each style made for a line (a style
    with another offset is a Rich style addition and a meta encoding): a wrapped line that
    changed a little is re-made with the styles of its pieces at the same places."""
    if y == 0:
        return strips
    out = []
    for strip in strips:
        segments = []
        for seg in strip:
            style = seg.style
            if style is not None:
                style = _at_line_style(style, y, moved)
            segments.append(Segment(seg.text, style, seg.control))
        out.append(Strip(segments, strip.cell_length))
    return out


def _at_line_style(
    style: RichStyle, y: int, moved: dict[tuple[RichStyle, int], RichStyle] | None
) -> RichStyle:
    """``style`` with its offset (if it has one) on line ``y``."""
    key = (style, y)
    kept = moved.get(key) if moved is not None else None
    if kept is None:
        offset = style.meta.get("offset")
        at = None if offset is None else RichStyle.from_meta({"offset": (offset[0], y)})
        kept = style if at is None else style + at
        if moved is not None:
            if len(moved) > _STYLED_MAX:  # a bound, not an LRU: the styles in use come back
                moved.clear()
            moved[key] = kept
    return kept


def _piece_starts(plain: str, pieces: list[str]) -> list[int] | None:
    """Where each wrapped piece of ``plain`` starts. Textual's wrap cuts a line into
    consecutive pieces and drops only the spaces each piece but the last ends with, so a
    piece starts within the run of spaces after the one before, as many cells before the
    run's end as it has spaces of its own: one place only. None when a piece is not there
    (cut with an ellipsis, or not Textual's wrap)."""
    starts, at = [], 0
    for piece in pieces:
        gap = at
        while gap < len(plain) and plain[gap].isspace():
            gap += 1
        x = gap - (len(piece) - len(piece.lstrip()))
        if not piece.strip() or x < at or not plain.startswith(piece, x):
            return None
        starts.append(x)
        at = x + len(piece)
    return starts if not plain[at:].strip() else None


class RowStatic(Static):
    """``show_rows(lines)`` instead of ``update``: each line of Rich Text may wrap onto
    several rows; only the rows that changed are rendered and repainted. ``render()`` gives
    the whole content as one Text (what a Static would show); while some of it is selected
    (Textual's text selection) it is rendered whole, as a Static renders it. Content passed
    to the constructor and a vertical ``content-align`` are not used."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lines: list[Text] = []
        # Per line: the Text, the width and style it was rendered at, and its strips.
        self._made: list[tuple[Text, int, object, list[Strip]] | None] = []
        self._rows: list[Strip] = []
        self._rows_key: tuple[int, object] | None = None  # (width, style) of _rows
        self._styled: dict[tuple[VisualStyle, int, int], RichStyle] = {}  # see _strip
        self._moved: dict[tuple[RichStyle, int], RichStyle] = {}  # see at_line
        self._visual: dict[tuple[object, object], VisualStyle] = {}  # see _content

    def show_rows(self, lines: Sequence[Text]) -> bool:
        """Show ``lines``; True when anything changed (then only changed rows repaint)."""
        if same_texts(lines, self._lines):
            return False
        self._lines = list(lines)
        width = self.size.width
        sized = fixed_size(self)  # else its height follows its rows (a scrolled list)
        if not self.is_mounted or not width or self._rows_key is None:
            self._rows_key = None
            # Nothing drawn yet: the first render lays every row out.
            self.refresh(layout=not sized)
            return True
        old = self._rows
        new = self._layout(width)
        if len(new) != len(old) and not sized:
            self.refresh(layout=True)  # other rows: a taller or shorter widget
        for y, count in _runs(changed_rows(old, new)):
            self.repaint(y, count, width)
        return True

    def repaint(self, y: int, count: int, width: int) -> None:
        """Repaint rows ``y`` to ``y + count`` that changed (a subclass may narrow it)."""
        self.refresh(Region(0, y, width, count))

    def _layout(self, width: int) -> list[Strip]:
        """Every row at ``width``, rendering only the lines not kept at this width and style."""
        style = self.visual_style
        if self.text_selection is not None:  # drawn over the whole text, as a Static does
            whole = visualize(self, self.render())
            self._rows = Visual.to_strips(self, whole, width, None, style)
            self._rows_key = (width, style)  # until the selection changes (selection_updated)
            return self._rows
        made = self._made
        del made[len(self._lines) :]
        made.extend([None] * (len(self._lines) - len(made)))
        rows: list[Strip] = []
        for i, text in enumerate(self._lines):
            kept = made[i]
            if kept is None or kept[1] != width or kept[2] != style or not same_text(kept[0], text):
                strips = self._one_row(text, width, style, i)
                if strips is None:
                    strips = self._wrapped_rows(text, width, style, i)
                if strips is None:
                    strips = Visual.to_strips(self, visualize(self, text), width, None, style)
                    strips = at_line(strips, i, self._moved)
                kept = made[i] = (text, width, style, strips)
            rows.extend(kept[3])
        self._rows, self._rows_key = rows, (width, style)
        return rows

    def _one_row(self, text: Text, width: int, style: VisualStyle, y: int) -> list[Strip] | None:
        """A line that fits its row, made as Textual makes such a line (each piece of
        ``Content.render`` styled over the widget's style, with its offset in the text)
        without the rest of Textual's layout, which was most of the cost; None when Textual
        must make it: the line wraps, or has tabs, links, another alignment or a line
        padding."""
        plain = text.plain
        if len(plain) > width or text.cell_len > width:
            return None
        if "\n" in plain or "\t" in plain or _linked(text):
            return None
        styles = self.styles  # what Textual's layout of a line would do that this does not
        if styles.text_align not in ("left", "start") or styles.line_pad:
            return None
        if styles.content_align_horizontal not in ("left", "start"):
            return None
        return [self._strip(self._content(text), 0, y, style)]

    def _wrapped_rows(
        self, text: Text, width: int, style: VisualStyle, y: int
    ) -> list[Strip] | None:
        """A line wider than its row, wrapped by Textual's public ``Content.wrap`` (its own
        breaks) and each piece made as ``_one_row`` makes a line, at its offset in the line;
        None when Textual must make it: anything ``_one_row`` leaves to it but the width,
        wide or combining characters, an overflow other than folding, or a piece not found
        at its place in the line."""
        plain = text.plain
        if "\n" in plain or "\t" in plain or _linked(text) or len(plain) != text.cell_len:
            return None
        styles = self.styles
        if styles.text_wrap == "nowrap" or styles.text_overflow != "fold" or styles.line_pad:
            return None  # a piece clipped or cut with an ellipsis: no longer the line's text
        if styles.text_align not in ("left", "start"):
            return None
        if styles.content_align_horizontal not in ("left", "start"):
            return None
        content = self._content(text)
        pieces = content.wrap(width, overflow="fold")
        starts = _piece_starts(plain, [piece.plain for piece in pieces])
        if starts is None:
            return None
        return [self._strip(p, x, y, style) for p, x in zip(pieces, starts, strict=True)]

    def _content(self, text: Text) -> Content:
        """``Content.from_rich_text(text)`` (what ``visualize`` makes of a Text), each span's
        Rich style converted once per widget and theme: the conversion (``Style.from_rich_style``,
        its colours' too) is made anew for every span of every line otherwise, which was the
        costliest part of a GPU panel's row. A Text with a style of its own is converted whole."""
        if text.style:
            content = visualize(self, text)
            assert isinstance(content, Content)  # a Text always visualizes as Content
            return content
        app = self.app
        theme = app.ansi_theme
        kept = self._visual
        spans = []
        for start, end, rich in text.spans:
            key = (rich, theme)
            visual = kept.get(key)
            if visual is None:
                if len(kept) > _VISUAL_MAX:  # a bound, not an LRU: the styles in use come back
                    kept.clear()
                parsed = app.console.get_style(rich) if isinstance(rich, str) else rich
                visual = kept[key] = VisualStyle.from_rich_style(parsed, theme)
            spans.append(Span(start, end, visual))
        return Content(text.plain, spans)

    def _strip(self, content: Content, x: int, y: int, style: VisualStyle) -> Strip:
        """One row of ``content``, its first character at offset ``x`` of line ``y``."""
        segments = []
        styled = self._styled
        if len(styled) > _STYLED_MAX:  # a bound, not an LRU: the styles in use come back
            styled.clear()
        for part, part_style in content.render(style, end=""):
            # A Rich style with its offset is a new object each time Textual makes it; the
            # same piece at the same place (a meter's bar, a sample later) takes the kept one.
            key = (style + part_style, x, y)
            rich = styled.get(key)
            if rich is None:
                rich = styled[key] = key[0].rich_style_with_offset(x, y)
            segments.append(Segment(part, rich))
            x += len(part)
        return Strip(segments, content.cell_length)

    def selection_updated(self, selection: object) -> None:
        self._rows_key = None  # drawn again, whole while selected
        super().selection_updated(selection)  # type: ignore[arg-type]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._rows_key != (width, self.visual_style):
            self._layout(width)
        rows = self._rows
        return rows[y] if y < len(rows) else Strip.blank(width, self.visual_style.rich_style)

    def render(self) -> Text:
        return Text("\n").join(self._lines)
