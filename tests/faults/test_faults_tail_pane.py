"""The log pane marks every gap the tail could not fill.

A real probe samples a real file that got a flood and a 10 MB line in one interval; its sample
is drawn by the app, whose pane must say, where it happened, how many lines it is not showing
and that a line was cut, so nothing is missing silently.
"""

from __future__ import annotations

import re
from pathlib import Path

from fakes.proberun import ProbeStream
from support import until

from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.logs.tail import LogTail
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.snapshot import Snapshot

NOT_SHOWN = re.compile(r"^┄┄ ([\d,]+) lines not shown")


async def test_the_pane_marks_lines_not_shown_and_cut_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    flood = [f"n={i:06d}" for i in range(9000)]
    with ProbeStream("--no-nvml", f"--log={log}", interval=0.5) as s:
        s.next()
        with open(log, "ab") as f:
            f.write(("\n".join(flood) + "\n").encode() + b"y" * (3 * 1024 * 1024) + b"\nlast\n")
        samples = s.until(lambda d: "last" in d["logs"][0]["lines"], timeout=20)
    snaps = [Snapshot.from_dict(x) for x in samples]
    app = DflashApp(Config(), source=ScriptedSource(snaps))  # type: ignore[arg-type]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        tail = app.screen.query_one(LogTail)
        await pilot.press("a")  # all lines, not the default filter
        await until(pilot, lambda: any("last" in x for x in tail.log_view.lines))
        shown = list(tail.log_view.lines)
    marks = [x for x in shown if x.startswith("┄┄ ")]
    not_shown = [x for x in marks if NOT_SHOWN.match(x)]
    (cut,) = [x for x in marks if "a line was cut after 16,384 bytes" in x]
    assert len(marks) == len(not_shown) + 1, marks
    # what the probe could not send, and what the pane could not keep, are said before the
    # lines they precede: shown + said = written, and the kept lines are the newest
    kept = [x for x in shown if x.startswith("n=")]
    dropped = sum(int(NOT_SHOWN.match(x).group(1).replace(",", "")) for x in not_shown)  # type: ignore[union-attr]
    assert dropped + len(kept) == len(flood) and dropped > 0
    assert max(shown.index(x) for x in not_shown) < shown.index(kept[0])
    assert kept == flood[-len(kept) :]
    assert shown.index(cut) == len(shown) - 2 and shown[-1] == "last"
