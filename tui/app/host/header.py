"""The header: the run first (state, id, uptime or exit code with its meaning), auto-restart
(or ``supervised`` with the PID, since when and the restarts of a live ``dflash-tui supervise``),
PID/PGID, host and link state (``stale Ns`` once a sample is overdue: the probe's interval
says when the next one was due); then the topology summary (healthy target x/5, drafter y/3),
which problem GPUs are scrolled out of the grid, and the count of findings.

Each line is built from parts ranked by importance: when the line is wider than the header,
the least important parts are shortened or left out first (the run's state, id and uptime
never are), and only then is the line cut with an ellipsis."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.events import Resize
from textual.widgets import Static

from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.no_job import NO_JOB_TEXT
from dflash_tui.app.widgets.palette import Palette
from dflash_tui.app.widgets.themed import Themed, show_changed
from dflash_tui.core.base.rundir import ALIVE_STATES as ACTIVE
from dflash_tui.core.base.rundir import exit_meaning
from dflash_tui.core.base.supervision import SupervisorRecord
from dflash_tui.core.base.text import safe_label
from dflash_tui.core.diagnosis.finding import duration
from dflash_tui.core.diagnosis.severity import label_severity, run_chip
from dflash_tui.core.diagnosis.views import Diagnosis

# GPUs not read are unknown, not unhealthy: muted, not red (the overview's rows too).
HEALTH_COLOUR = {"ok": "ok", "unknown": "muted", "bad": "error"}

KEEP = 100  # rank of a part that is never shortened


@dataclass
class Part:
    """One field of a header line: its forms, longest first (the last one may be empty),
    and its rank: the lower, the sooner it is shortened when the line does not fit."""

    forms: list[Text]
    rank: int = KEEP


def part(text: str, style: Style | str = "", rank: int = KEEP, *shorter: str) -> Part:
    forms = [Text(text, style=style), *(Text(s, style=style) for s in shorter)]
    return Part(forms, rank)


def fit(parts: list[Part], width: int) -> Text:
    """Join ``parts`` in order, shortening the lowest-ranked ones until the line fits
    ``width`` cells (0: unknown, nothing is shortened)."""
    chosen = [0] * len(parts)
    # Every form's width measured once: the header is fitted again at every sample.
    lens = [[f.cell_len for f in p.forms] for p in parts]
    total = sum(n[0] for n in lens)
    while width > 0 and total > width:
        left = [i for i, n in enumerate(lens) if chosen[i] < len(n) - 1]
        if not left:
            break
        # The lowest rank first; of equal ranks, the rightmost first.
        i = min(left, key=lambda i: (parts[i].rank, -i))
        total += lens[i][chosen[i] + 1] - lens[i][chosen[i]]
        chosen[i] += 1
    # Shortening a later part may have made room for an earlier one: give back what fits.
    for i in sorted(range(len(parts)), key=lambda i: (-parts[i].rank, i)):
        while chosen[i] > 0:
            longer = total + lens[i][chosen[i] - 1] - lens[i][chosen[i]]
            if longer > width:
                break
            chosen[i] -= 1
            total = longer
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for p, c in zip(parts, chosen, strict=True):
        out.append_text(p.forms[c])
    return out


class RunHeader(Static, Themed):
    DEFAULT_CSS = """
    RunHeader {
        height: 2; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, host: str, read_only: bool) -> None:
        super().__init__(id="header")
        self.host = host
        self.read_only = read_only
        self.link = "connecting"  # connecting | connected | down | idle (no job on the node)
        self.link_detail = ""
        self.diag: Diagnosis | None = None
        self.job: str | None = None  # under Slurm: the job's line (tui/app/host/slurm.py)
        self.auto = "off"  # auto-restart: off | on | fatal (nothing drawn while off)
        # Problem GPUs whose panel is scrolled out of the grid: (index, codes, arrow).
        self.offscreen: tuple[tuple[int, tuple[str, ...], str], ...] = ()
        self._watched: GpuGrid | None = None
        # Whole seconds since the last sample once it is overdue or the link is down; the
        # host's pane (tui/app/host/pane.py) keeps that one clock and says it here.
        self.stale_s: int | None = None

    def on_mount(self) -> None:
        self.redraw()
        self.call_after_refresh(self.recheck)

    def show_stale(self, age: int | None) -> None:
        """A probe that froze (a stuck mount, a frozen SSH link) sends nothing and no error:
        from the first missed sample the header says ``stale Ns`` instead of ``connected``."""
        if age != self.stale_s:
            self.stale_s = age
            self.redraw()

    def on_resize(self, _event: Resize) -> None:
        self.redraw()
        self.call_after_refresh(self.recheck)  # the grid reflows its columns too

    def show(self, diag: Diagnosis, job: str | None = None) -> None:
        self.diag, self.job = diag, job
        self.link, self.link_detail = "connected", diag.telemetry_source
        self.stale_s = None
        self.redraw()
        self.call_after_refresh(self.recheck)  # once the grid has drawn this sample

    def show_link(self, state: str, detail: str) -> None:
        self.link, self.link_detail = state, detail
        self.redraw()

    def show_auto(self, auto: str) -> None:
        self.auto = auto
        self.redraw()

    # -- problem GPUs out of sight --

    def _grid_scrolled(self, _scroll_y: float) -> None:
        # Panels move on the next refresh after a scroll: check then.
        self.call_after_refresh(self.recheck)

    def _grid(self) -> GpuGrid | None:
        """The grid beside the header: the one watched while it is still there (a query of
        the pane's children after every sample cost as much as the check itself)."""
        if self.parent is None:
            return None
        watched = self._watched
        if watched is not None and watched.parent is self.parent:
            return watched
        grids = self.parent.query_children(GpuGrid)
        return grids.first() if grids else None

    def recheck(self) -> None:
        """Find the problem GPUs whose panel is not wholly in the grid's viewport; redraw
        if that changed. Runs after each sample, resize and scroll of the grid."""
        if not self.is_attached:
            return
        grid = self._grid()
        if grid is None:
            return
        if self._watched is not grid:
            self._watched = grid
            self.watch(grid, "scroll_y", self._grid_scrolled, init=False)
        offscreen = self._find_offscreen(grid)
        if offscreen is not None and offscreen != self.offscreen:
            self.offscreen = offscreen
            self.redraw()

    def _find_offscreen(self, grid: GpuGrid) -> tuple[tuple[int, tuple[str, ...], str], ...] | None:
        d = self.diag
        viewport = grid.scrollable_content_region
        if d is None or not viewport.area:
            return None  # not drawn yet, or this host's pane is hidden: nothing to say
        active = d.run_state in ACTIVE
        problems = []
        for view in d.gpus:
            bad = tuple(c for c in view.codes if label_severity(c, active) in ("warning", "error"))
            if bad:
                problems.append((view.index, bad))
        if not problems:
            return ()
        regions = grid.regions_of(i for i, _ in problems)  # panels, or lines when compact
        out = []
        for index, bad in problems:
            region = regions.get(index)
            if region is None or not region.area or viewport.contains_region(region):
                continue
            out.append((index, bad, "↓" if region.y >= viewport.y else "↑"))
        return tuple(out)

    # -- drawing --

    def redraw(self) -> None:
        pal = self.palette
        width = self.size.width  # the content area (padding excluded); 0 until laid out
        top = self._run(pal) + self._job(pal) + self._auto(pal) + self._pids(pal) + self._where(pal)
        bottom = self._topology(pal) + self._hint(pal) + self._counts(pal)
        if self.read_only:
            bottom.append(part("  READ-ONLY ", pal.chip("warning")))
        t = fit(top, width)
        t.append("\n")
        t.append_text(fit(bottom, width))
        show_changed(self, t)

    def _run(self, pal: Palette) -> list[Part]:
        d = self.diag
        # The chip leads at every width (no `run ` prefix that comes and goes and moves
        # every field after it): its words (RUNNING, EXITED, ...) say it is the run's state.
        out: list[Part] = []
        if d is None:
            out.append(part(" UNKNOWN ", pal.chip("info")))
            out.append(part("  no sample yet", pal.fg("muted"), 30, ""))
            return out
        run, state = d.run, d.run_state
        word, severity = run_chip(state, run)
        out.append(part(f" {word} ", pal.chip(severity)))
        if run is None:
            out.append(part("  no run launched from here yet", pal.fg("muted"), 30, ""))
            return out
        out.append(part(f"  {safe_label(run.id, 40)}"))
        if state in ACTIVE and run.started_at is not None:
            up = f"  up {duration(d.time - run.started_at)}"
            if self.link != "connected" or self.stale_s is not None:
                # No sample measures the run now: its uptime is the last sample's, said so.
                out.append(part(f"{up} at the last sample", pal.fg("muted"), 40, f"{up} (old)"))
            else:
                out.append(part(up))
        elif run.exit_code is not None or state == "killed":
            shown = "code unknown" if run.exit_code is None else run.exit_code
            out.append(part(f"  exit {shown}", pal.fg("muted")))
            meaning = exit_meaning(run.exit_code)
            forms = []
            lead = ": "
            for m in (meaning, safe_label(meaning, 24), None):
                form = Text(lead if m else "", pal.fg("muted"))
                form.append(m or "", pal.fg("error" if run.exit_code != 0 else "ok"))
                forms.append(form)
            out.append(Part(forms, 45))
            if state == "killed" and run.kill_requested_at is None:
                out.append(part("  not requested by us", pal.fg("error"), 40, "  unrequested", ""))
        if run.launch_error:
            err = safe_label(run.launch_error, 80)
            out.append(part(f"  {err}", pal.fg("error"), 25, f"  {safe_label(err, 24)}", ""))
        return out

    def _job(self, pal: Palette) -> list[Part]:
        """The Slurm job: its state, its pending reason and expected start, or its nodes."""
        if self.job is None:
            return []
        return [part(f"  {safe_label(self.job, 120)}", pal.fg("info", bold=True), 50,
                     f"  {safe_label(self.job, 40)}")]  # fmt: skip

    def _auto(self, pal: Palette) -> list[Part]:
        sup = self.diag.supervisor if self.diag else None
        if sup is not None and self.diag is not None and sup.live(self.diag.time):
            return self._supervised(pal, sup)
        if self.auto == "on":
            return [
                part("  │ ", pal.fg("muted")),
                part("auto-restart on", pal.fg("ok"), 44, "AR"),
            ]
        if self.auto == "fatal":
            return [
                part("  │ auto-restart ", pal.fg("muted"), 44, "  │ AR "),
                part(" FATAL ", pal.chip("error")),
            ]
        return []

    def _supervised(self, pal: Palette, sup: SupervisorRecord) -> list[Part]:
        """A live headless supervisor (``dflash-tui supervise``) runs this run's auto-restart;
        when it gave up, its FATAL is drawn as the app's own (the record's one account)."""
        since = time.strftime("%H:%M", time.localtime(sup.started_at)) if sup.started_at else ""
        who = " ".join(
            x
            for x in (f"PID {sup.pid}" if sup.pid is not None else "", since and f"since {since}")
            if x
        )
        pid = f"PID {sup.pid}, " if sup.pid is not None else ""
        if sup.fatal is not None:
            why = safe_label(sup.fatal.text(), 120)
            short = safe_label(sup.fatal.text(last_exit=False), 60)
            return [
                part(f"  │ supervised ({who}) ", pal.fg("muted"), 44, "  │ supervised ", "  │ "),
                part(" FATAL ", pal.chip("error")),
                part(f" {why}", pal.fg("error"), 46, f" {short}", ""),
            ]
        n = f"{sup.restarts} restart{'' if sup.restarts == 1 else 's'}"
        auto = "" if sup.auto is None else f", {safe_label(sup.policy_text(), 60)}"
        return [
            part("  │ ", pal.fg("muted")),
            part(
                f"supervised ({who + ', ' if who else ''}{n}{auto})",
                pal.fg("ok"),
                44,
                f"supervised ({pid}{n})",
                "supervised",
                "SV",
            ),
        ]

    def _pids(self, pal: Palette) -> list[Part]:
        run = self.diag.run if self.diag else None
        if run is None:
            return []
        ids = [f"{name} {n}" for name, n in (("PID", run.pid), ("PGID", run.pgid)) if n is not None]
        if not ids:  # a launch that failed before the job existed: no PID to show
            return []
        return [part("  │ " + " ".join(ids), pal.fg("muted"), 35, "")]

    def _where(self, pal: Palette) -> list[Part]:
        labels = [f"  │ {safe_label(self.host, 60)} ", f"  │ {safe_label(self.host, 16)} "]
        if self.link == "connected" and self.stale_s is not None:
            return [
                part(labels[0], "", 40, labels[1]),
                part(f"◌ stale {self.stale_s}s ", pal.fg("warning", bold=True)),
                part("(no sample since; the data shown is old)", pal.fg("warning"), 20, ""),
            ]
        if self.link == "connected":
            # The usual state: at a squeeze it shrinks to a green dot.
            forms = []
            for label in [*labels, "  │ "]:
                form = Text(label)
                form.append("● connected" if label.strip() != "│" else "●", pal.fg("ok", bold=True))
                forms.append(form)
            out = [Part(forms, 42)]
            if self.link_detail:
                detail = f" (GPUs via {safe_label(self.link_detail, 20)})"
                out.append(part(detail, pal.fg("muted"), 20, ""))
            return out
        out = [part(labels[0], "", 40, labels[1])]
        if self.link == "idle":
            out.append(part(f"○ {NO_JOB_TEXT}", pal.fg("muted")))
        elif self.link == "down":
            out.append(part("● DISCONNECTED ", pal.fg("error", bold=True), 65, "● DOWN "))
            detail = safe_label(self.link_detail, 80)
            out.append(part(detail, pal.fg("error"), 60, safe_label(detail, 30), ""))
        else:
            out.append(part("○ connecting …", pal.fg("warning")))
        return out

    def _topology(self, pal: Palette) -> list[Part]:
        d = self.diag
        if d is None:
            return [part("topology ?", pal.fg("muted"))]
        out = [
            part("topology ", pal.fg("muted"), 15, ""),
            part(f"{d.topology.spec()}", pal.fg("muted")),
            part("  healthy ", pal.fg("muted"), 18, "  "),
        ]
        for role in ("target", "drafter"):
            t = Text(f"{role} ")
            t.append(d.health_text(role), pal.fg(HEALTH_COLOUR[d.health_level(role)], bold=True))
            t.append("  ")
            out.append(Part([t]))
        return out

    def _hint(self, pal: Palette) -> list[Part]:
        """Problem GPUs scrolled out of the grid, so none goes unnoticed at small sizes."""
        if not self.offscreen:
            return []
        gpus = ", ".join(str(i) for i, _, _ in self.offscreen)
        noun = "GPU" if len(self.offscreen) == 1 else "GPUs"
        codes = ", ".join(dict.fromkeys(c for _, cs, _ in self.offscreen for c in cs))
        arrows = "".join(sorted({a for _, _, a in self.offscreen}, key="↑↓".index))
        style = pal.fg("warning", bold=True)
        return [
            part("│ ", pal.fg("muted")),
            part(
                f"{noun} {gpus} {codes} off-screen {arrows}  ",
                style,
                70,
                f"{noun} {gpus} {codes} {arrows}  ",
                f"{noun} {gpus} off-screen {arrows}  ",
                f"{noun} {gpus} {arrows}  ",
            ),
        ]

    def _counts(self, pal: Palette) -> list[Part]:
        d = self.diag
        if d is None:
            return []
        counts = {s: sum(1 for f in d.findings if f.severity == s) for s in ("error", "warning")}
        # No sample measures the host now: the counts are the last sample's, said so and muted,
        # never shown as current.
        old = self.link != "connected" or self.stale_s is not None
        t = Text("│ ", pal.fg("muted"))
        if not any(counts.values()):
            t.append("no problems found", pal.fg("muted" if old else "ok"))
        said = [(sev, n) for sev, n in counts.items() if n]
        for i, (sev, n) in enumerate(said):
            t.append(", " if i else "", pal.fg("muted"))
            t.append(f"{n} {sev}{'s' if n > 1 else ''}", pal.fg("muted" if old else sev, bold=True))
        t.append(" at the last sample " if old else " ", pal.fg("muted"))
        return [Part([t], 60)]
