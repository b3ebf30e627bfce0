"""The replay's time bar: where in the recording the screen is, and where its events are.

Two lines: the state (playing or paused, the sample's time, its offset from the start, the
sample number, the speed, the next event) and a bar across the width with the events marked
(``|``, ``!`` for an error) and the position (``●``).
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from dflash_tui.core.base.text import safe_label
from dflash_tui.core.record.replay import Recording


def _clock(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + "Z"


def _span(s: float) -> str:
    s = max(int(s), 0)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"
    return f"{s // 60}m{s % 60:02d}s"


class TimeBar(Static):
    DEFAULT_CSS = """
    TimeBar { height: 2; background: $panel; padding: 0 1; text-wrap: nowrap; }
    """

    def __init__(self) -> None:
        super().__init__(id="timebar")
        self.text = ""  # the plain text shown (tests read it)

    def show(self, rec: Recording, index: int, playing: bool, speed: float) -> None:
        if index < 0:
            return
        t = rec.samples[index].time
        mark = "▶ playing" if playing else "⏸ paused"
        after = [i for i in rec.jumps() if i > index]
        here = [str(e.get("kind")) for e in rec.samples[index].events if e.get("kind") != "log"]
        nxt = f"  here: {safe_label(', '.join(here), 40)}" if here else ""
        if after:
            ev = next(iter(rec.samples[after[0]].events), {})
            at = _span(rec.samples[after[0]].time - rec.start)
            nxt += f"  next: {safe_label(str(ev.get('kind', '?')), 20)} at +{at}"
        head = (
            f"REPLAY {mark}  {_clock(t)}  +{_span(t - rec.start)} of {_span(rec.end - rec.start)}"
            f"  sample {index + 1}/{len(rec.samples)}  {speed:g}x{nxt}"
        )
        width = max(self.size.width - 2, 20)
        self.text = head + "\n" + self._bar(rec, index, width)
        line = Text(head, style="bold")
        if rec.notes:
            line.append(f"  ({len(rec.notes)} note{'s' if len(rec.notes) > 1 else ''})", "yellow")
        self.update(Text("\n").join([line, Text(self._bar(rec, index, width))]))

    @staticmethod
    def _bar(rec: Recording, index: int, width: int) -> str:
        span = max(rec.end - rec.start, 1e-9)
        cells = ["─"] * width

        def at(t: float) -> int:
            return min(int((t - rec.start) / span * (width - 1)), width - 1)

        for i in rec.jumps():
            bad = any(e.get("severity") == "error" for e in rec.samples[i].events)
            cells[at(rec.samples[i].time)] = "!" if bad else "|"
        cells[at(rec.samples[index].time)] = "●"
        return "".join(cells)
