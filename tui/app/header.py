"""The header: host, link state, the run (state, id, PID/PGID, uptime or exit code with its
meaning) and the topology summary (healthy target x/5, drafter y/3)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.app.palette import Palette
from tui.app.text import safe_label
from tui.app.widgets import Themed
from tui.core.diagnose import Diagnosis
from tui.core.findings import duration
from tui.core.rundir import exit_meaning

STATE_SEVERITY = {
    "none": "info",
    "starting": "warning",
    "running": "ok",
    "exited": "info",
    "killed": "warning",
    "launch-failed": "error",
}


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
        self.link = "connecting"  # connecting | connected | down
        self.link_detail = ""
        self.diag: Diagnosis | None = None
        self.auto = "off"  # auto-restart: off | on | fatal (nothing drawn while off)

    def on_mount(self) -> None:
        self.redraw()

    def show(self, diag: Diagnosis) -> None:
        self.diag, self.link, self.link_detail = diag, "connected", diag.telemetry_source
        self.redraw()

    def show_link(self, state: str, detail: str) -> None:
        self.link, self.link_detail = state, detail
        self.redraw()

    def show_auto(self, auto: str) -> None:
        self.auto = auto
        self.redraw()

    def redraw(self) -> None:
        pal = self.palette
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("dflash-tui ", pal.fg("info", bold=True))
        t.append(f"{safe_label(self.host, 60)} ")
        self._link(t, pal)
        self._auto(t, pal)
        self._run(t, pal)
        t.append("\n")
        self._topology(t, pal)
        if self.read_only:
            t.append("  READ-ONLY ", pal.chip("warning"))
        self.update(t)

    def _link(self, t: Text, pal: Palette) -> None:
        if self.link == "connected":
            t.append("● connected", pal.fg("ok", bold=True))
            if self.link_detail:
                t.append(f" (GPUs via {safe_label(self.link_detail, 20)})", pal.fg("muted"))
        elif self.link == "down":
            t.append("● DISCONNECTED ", pal.fg("error", bold=True))
            t.append(safe_label(self.link_detail, 80), pal.fg("error"))
        else:
            t.append("○ connecting …", pal.fg("warning"))

    def _auto(self, t: Text, pal: Palette) -> None:
        # Before the run, so a long run line cannot push it out of sight.
        if self.auto == "on":
            t.append("  │ ", pal.fg("muted"))
            t.append("auto-restart on", pal.fg("ok"))
        elif self.auto == "fatal":
            t.append("  │ auto-restart ", pal.fg("muted"))
            t.append(" FATAL ", pal.chip("error"))

    def _run(self, t: Text, pal: Palette) -> None:
        d = self.diag
        t.append("  │ run ", pal.fg("muted"))
        if d is None:
            t.append("?", pal.fg("muted"))
            return
        run, state = d.run, d.run_state
        t.append(f" {state.upper()} ", pal.chip(STATE_SEVERITY.get(state, "info")))
        if run is None:
            t.append("  no run launched from here yet", pal.fg("muted"))
            return
        t.append(f" {safe_label(run.id, 40)}")
        t.append(f"  PID {run.pid} PGID {run.pgid}", pal.fg("muted"))
        if state in ("starting", "running") and run.started_at is not None:
            t.append(f"  up {duration(d.time - run.started_at)}")
        elif run.exit_code is not None or state == "killed":
            t.append(f"  exit {run.exit_code}: ", pal.fg("muted"))
            t.append(exit_meaning(run.exit_code), pal.fg("error" if run.exit_code else "ok"))
        if run.launch_error:
            t.append(f"  {safe_label(run.launch_error, 80)}", pal.fg("error"))

    def _topology(self, t: Text, pal: Palette) -> None:
        d = self.diag
        if d is None:
            t.append("topology ?", pal.fg("muted"))
            return
        t.append(f"topology {d.topology.spec()}  healthy ", pal.fg("muted"))
        for role in ("target", "drafter"):
            ok, want = d.healthy(role)
            t.append(f"{role} ")
            t.append(f"{ok}/{want}", pal.fg("ok" if ok == want else "error", bold=True))
            t.append("  ")
        counts = {s: sum(1 for f in d.findings if f.severity == s) for s in ("error", "warning")}
        t.append("│ ", pal.fg("muted"))
        if not any(counts.values()):
            t.append("no problems found", pal.fg("ok"))
        for sev, n in counts.items():
            if n:
                t.append(f"{n} {sev}{'s' if n > 1 else ''} ", pal.fg(sev, bold=True))
