"""The GPU process table across all GPUs (the ``GPU procs`` tab, ``p``): PID, user, GPU, GPU
memory, CPU %, RSS, elapsed, owner, command. ``o`` cycles the sort column (a header click
sorts by it, a second click reverses), ``/`` opens its filter box (a substring, live),
``space`` tags a row; ``K`` kills the tagged processes (else the row under the cursor) with
one confirm naming every PID (tui/app/control/actions.py).

Every cell is a Rich Text of terminal-safe text: DataTable would read a plain str as markup.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from dflash_tui.app.host.procs.gpu_rows import COLUMNS, GpuProcRow, gpu_proc_rows
from dflash_tui.app.host.procs.tree import ProcInfo
from dflash_tui.app.widgets.boxes import open_box
from dflash_tui.app.widgets.themed import show_changed
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import mib, safe_label
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.views import Diagnosis

NONE = "—"  # a value the sample does not have


class GpuProcView(Vertical):
    """The table with its title line (sort, filter, tags) and its filter box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "sort_next", "Sort", show=False),
        Binding("slash", "open_filter", "Filter rows", show=False),
        Binding("space", "tag", "Tag", show=False),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]
    DEFAULT_CSS = """
    GpuProcView {
        height: 1fr;
        #gpu-proc-title { height: 1; padding: 0 1; background: $panel; }
        #gpu-proc-filter { display: none; height: 3; }
        &.-filtering #gpu-proc-filter { display: block; }
        DataTable { height: 1fr; }
    }
    """

    def __init__(self) -> None:
        super().__init__(id="gpu-procs")
        self.rows: list[GpuProcRow] = []
        self.shown: list[GpuProcRow] = []
        self.sort_by, self.reverse = "gpu", False
        self.filter_text = ""
        self.tagged: set[int] = set()  # PIDs
        self.pending = False  # a sample came while hidden: fill when shown
        self.filled: tuple[object, ...] = ()  # what the table holds: unchanged, not rebuilt

    def compose(self) -> ComposeResult:
        yield Static(id="gpu-proc-title")
        yield Input(placeholder="filter: PID, user, gpuN, owner, command", id="gpu-proc-filter")
        table: DataTable[Text] = DataTable(id="gpu-proc-table", cursor_type="row")
        for key, label in COLUMNS:
            table.add_column(Text(label), key=key)
        yield table

    def on_mount(self) -> None:
        self._title()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#gpu-proc-table", DataTable)

    def show(self, snap: Snapshot, diag: Diagnosis) -> None:
        self.rows = gpu_proc_rows(snap, diag)
        self.tagged &= {r.pid for r in self.rows}  # a process gone is no longer tagged
        # A hidden tab does not rebuild its table each sample: it fills when shown.
        self.pending = not self.is_on_screen
        if not self.pending:
            self._fill()

    def on_show(self) -> None:
        if self.pending:
            self.pending = False
            self._fill()

    # -- keys --

    def action_sort_next(self) -> None:
        keys = [k for k, _ in COLUMNS]
        self.sort_by, self.reverse = keys[(keys.index(self.sort_by) + 1) % len(keys)], False
        self._fill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = str(event.column_key.value)
        self.reverse = not self.reverse if key == self.sort_by else False
        self.sort_by = key
        self._fill()

    def action_open_filter(self) -> None:
        open_box(self, "-filtering", "gpu-proc-filter", self.filter_text)

    def action_close_filter(self) -> None:
        if self.has_class("-filtering"):
            self.remove_class("-filtering")
            self.table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value.strip()
        self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()  # not the log filter's (MainScreen)
        self.filter_text = event.value.strip()
        self._fill()
        self.remove_class("-filtering")
        self.table.focus()

    def action_tag(self) -> None:
        row = self.cursor_row()
        if row is None:
            return
        self.tagged ^= {row.pid}
        self._fill()
        self.table.action_cursor_down()

    # -- what K acts on --

    def cursor_row(self) -> GpuProcRow | None:
        at = self.table.cursor_row
        return self.shown[at] if 0 <= at < len(self.shown) else None

    def targets(self) -> list[GpuProcRow]:
        """The tagged processes (one row each), else the row under the cursor."""
        if self.tagged:
            seen: dict[int, GpuProcRow] = {}
            for row in self.rows:
                if row.pid in self.tagged:
                    seen.setdefault(row.pid, row)
            return list(seen.values())
        here = self.cursor_row()
        return [here] if here is not None else []

    def selected_infos(self) -> tuple[list[ProcInfo], list[int]]:
        """K's processes: those the probe sees, and the PIDs it does not (refused)."""
        rows = self.targets()
        return [r.info for r in rows if r.info], [r.pid for r in rows if r.info is None]

    # -- drawing --

    def _fill(self) -> None:
        table = self.table
        before = self.cursor_row()
        needle = self.filter_text.lower()
        shown = [r for r in self.rows if needle in r.haystack()]
        known = sorted((r for r in shown if r.sort_key(self.sort_by)[0] == 0),
                       key=lambda r: r.sort_key(self.sort_by), reverse=self.reverse)  # fmt: skip
        self.shown = known + [r for r in shown if r.sort_key(self.sort_by)[0] == 1]
        rows = [(r.key, cells(r, r.pid in self.tagged)) for r in self.shown]
        filled = (self.sort_by, self.reverse, *((k, *(c.plain for c in cs)) for k, cs in rows))
        if filled == self.filled:
            self._title()
            return
        self.filled = filled
        table.clear()
        for key, row_cells in rows:
            table.add_row(*row_cells, key=key)
        for key, label in COLUMNS:
            arrow = (" ▼" if self.reverse else " ▲") if key == self.sort_by else ""
            table.columns[key].label = Text(label + arrow)  # type: ignore[index]
        if before is not None:
            at = next((i for i, r in enumerate(self.shown) if r.key == before.key), None)
            if at is not None:
                table.move_cursor(row=at, animate=False)
        self._title()

    def _title(self) -> None:
        parts = [f"{len(self.shown)} of {len(self.rows)} GPU processes", f"sort {self.sort_by}"]
        if self.filter_text:
            parts.append(f"filter {safe_label(self.filter_text, 30)!r}")
        if self.tagged:
            parts.append(f"{len(self.tagged)} tagged (K kills them)")
        parts.append("o sort  / filter  space tag")
        show_changed(self.query_one("#gpu-proc-title", Static), Text("  ·  ".join(parts)))


def cells(row: GpuProcRow, tagged: bool) -> list[Text]:
    """The row's cells, terminal-safe; ``—`` where the sample has no value."""
    mark = "● " if tagged else ""
    return [
        Text(f"{mark}{row.pid}", style="bold" if tagged else ""),
        Text(safe_label(row.user, 16) if row.user else NONE),
        Text(str(row.gpu)),
        Text(mib(row.used_mib) if row.used_mib is not None else NONE),
        Text(f"{row.cpu_pct:.1f}" if row.cpu_pct is not None else NONE),
        Text(mib(row.rss_kb // 1024) if row.rss_kb is not None else NONE),
        Text(duration(row.elapsed_s) if row.elapsed_s is not None else NONE),
        Text(row.owner),
        Text(safe_label(row.command, 120) or NONE),
    ]
