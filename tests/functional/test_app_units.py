"""The app's pure parts: text sanitising, bars, the line store, the timeline, theme files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dflash_train.topology import Topology
from dflash_tui.app.host.logs.lines import DEFAULT_FILTER, LineStore, compile_filter
from dflash_tui.app.host.procs.tree import gpu_list
from dflash_tui.app.widgets.spark import bar, sparkline
from dflash_tui.app.widgets.themes import (
    BUNDLED,
    ThemeError,
    bundled_dir,
    discover,
    theme_from_dict,
    user_dir,
)
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.base.text import clean_line, safe_label, si
from dflash_tui.core.diagnosis.diagnose import diagnose
from dflash_tui.core.diagnosis.timeline import Event, Timeline


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[1;31mred\x1b[0m", "red"),
        ("\x1b]0;title\x07rest", "rest"),
        ("\x1b]0;unterminated title", ""),
        ("a\x1bPdcs stuff\x1b\\b", "ab"),
        ("\x1b(Bx\x1b=y", "xy"),
        ("[bold]x[/bold]", "[bold]x[/bold]"),
        ("a\x00b\x7fc\x9bd", "abcd"),
        ("10%\r50%\r100%", "100%"),
        ("100%\r", "100%"),
        ("tab\there", "tab here"),
        ("s\ud800x", "s\ufffdx"),
        ("rtl\u202eevil", "rtlevil"),
        ("line\u2028sep", "linesep"),
    ],
)
def test_clean_line(raw: str, shown: str) -> None:
    assert clean_line(raw) == shown


def test_clean_line_cuts_giant_lines_cheaply() -> None:
    out = clean_line("\x1b[31m" + "y" * 10_000_000)
    assert len(out) < 4200 and out.endswith("more characters not shown]")
    assert "\x1b" not in out
    assert safe_label("x" * 300, 20) == "x" * 19 + "…"


def test_bars_sparklines_and_numbers() -> None:
    assert bar(0.0, 4) == "░░░░" and bar(1.0, 4) == "████" and bar(None, 3) == "···"
    assert bar(0.5, 4) == "██░░"
    assert sparkline([0, 50, 100], 5, 0, 100) == "  ▁▅█"
    assert sparkline([None, 1.0], 2, None, None) == " ▁"
    assert si(2810) == "2.8K" and si(None) == "-" and si(12) == "12"
    assert gpu_list((0, 1, 2, 3, 4, 7)) == "GPUs 0-4,7" and gpu_list((5,)) == "GPU 5"


def test_line_store_is_bounded_and_refilters() -> None:
    store = LineStore(max_lines=100)
    store.pattern = compile_filter(DEFAULT_FILTER)
    store.add([f"noise {i}" for i in range(150)] + ["step=1 loss=2", "Traceback (most recent"])
    assert len(store.lines) == 100 and store.received == 152 and store.dropped == 52
    assert store.take_pending() == ["step=1 loss=2", "Traceback (most recent"]
    assert len(store.set_filter(None)) == 100
    assert store.set_filter(re.compile("noise 14[0-9]")) == [f"noise {i}" for i in range(140, 150)]
    with pytest.raises(ValueError, match="not a valid regular expression"):
        compile_filter("(")


T0 = 1_000_000.0
ROOT = "/r"


def snap(t: float, run: dict | None, procs: list[dict], lines: list[str], exists: bool = True):  # type: ignore[no-untyped-def]
    logs = [{"path": f"{ROOT}/a/output.log", "exists": exists, "lines": lines, "is_run_log": True}]
    return Snapshot.from_dict(
        {"time": t, "telemetry": {"source": "none"}, "procs": procs, "run": run, "logs": logs}
    )


def run(rid: str, pgid: int, started: float, **kw: object) -> dict:  # type: ignore[type-arg]
    return {"id": rid, "dir": f"{ROOT}/{rid}", "pid": pgid, "pgid": pgid, "start_ticks": 7,
            "started_at": started, **kw}  # fmt: skip


def alive(pgid: int) -> list[dict]:  # type: ignore[type-arg]
    return [{"pid": pgid, "ppid": 1, "pgid": pgid, "sid": pgid, "state": "S", "start_ticks": 7}]


def fold(tl: Timeline, s: Snapshot) -> list[tuple[str, str]]:
    d = diagnose([s], Topology((), ()))
    return [(e.kind, e.text) for e in tl.fold(s, d)]


def test_timeline_launch_milestones_crash_and_restart() -> None:
    tl = Timeline()
    assert fold(tl, snap(T0, None, [], [], exists=False)) == [
        ("log", f"log missing: {ROOT}/a/output.log")
    ]
    ev = fold(tl, snap(T0 + 1, run("a", 50, T0 + 1), alive(50), [], exists=False))
    assert ev == [("launched", "launched run a (PID 50, PGID 50)")]
    lines = ["dflash-train: compiled (dense) on cpu", '{"event": "warmed"}', "step=1 loss=5"]
    ev = fold(tl, snap(T0 + 5, run("a", 50, T0 + 1), alive(50), lines))
    kinds = [k for k, _ in ev]
    assert kinds == ["running", "log", "compiled", "warmed", "first_step"]
    assert fold(tl, snap(T0 + 7, run("a", 50, T0 + 1), alive(50), ["step=2 loss=4"])) == []
    ev = fold(tl, snap(T0 + 9, run("a", 50, T0 + 1, exit_code=137, ended_at=T0 + 8), [], []))
    assert ev == [
        ("crash", "crashed: exit 137: SIGKILL (often the kernel's OOM killer, or a kill -9)")
    ]
    ev = fold(tl, snap(T0 + 12, run("b", 60, T0 + 11), alive(60), []))
    assert ev[0] == ("launched", "launched run b (PID 60, PGID 60) (after a)")
    ev = fold(tl, snap(T0 + 20, run("c", 70, T0 + 19), alive(70), []))
    assert ev[0] == ("restarted", "restarted: run c (PID 70, PGID 70) replaces b")


def test_timeline_attaches_to_a_running_run() -> None:
    tl = Timeline()
    ev = fold(tl, snap(T0 + 100, run("a", 50, T0), alive(50), []))
    assert ev == [("attached", "attached to run a (PID 50, PGID 50), running")]


def test_theme_files_validate() -> None:
    t = theme_from_dict(
        {"name": "x", "primary": "#123456", "variables": {"chip-ok": "#00ff00"}}, "f"
    )
    assert t.name == "x" and t.variables["chip-ok"] == "#00ff00"
    for bad, why in [
        ({"primary": "#fff"}, "'name'"),
        ({"name": "x"}, "'primary'"),
        ({"name": "x", "primary": "#fff", "dark": "yes"}, "'dark'"),
        ({"name": "x", "primary": "#fff", "error": 3}, "'error'"),
        ({"name": "x", "primary": "no-such-colour"}, "f:"),
        ({"name": "x", "primary": "#fff", "variables": {"a": 1}}, "variables"),
    ]:
        with pytest.raises(ThemeError, match=why):
            theme_from_dict(bad, "f")


def test_bundled_and_user_themes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {p.name for p in bundled_dir().iterdir()} >= {f"{n}.toml" for n in BUNDLED}
    monkeypatch.setenv("XDG_CONFIG_HOME", "/x")
    assert user_dir() == Path("/x/dflash-tui/themes")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", "/home/u")
    assert user_dir() == Path("/home/u/.config/dflash-tui/themes")
    (tmp_path / "mine.toml").write_text('name = "dflash-dark"\nprimary = "#ff0000"\n')
    (tmp_path / "bad.toml").write_text("name = \n")
    themes, errors = discover(tmp_path)
    by_name = {t.name: t for t in themes}
    assert set(BUNDLED) <= set(by_name) and by_name["dflash-dark"].primary == "#ff0000"
    assert len(errors) == 1 and "bad.toml" in errors[0]


def test_timeline_keeps_time_order_across_sources() -> None:
    """Auto-restart's decision is added when it is made; a later sample
    reports the crash at its end time, which came first: the timeline stays in time order.
    A failed launch has no PID: the launch line says none (never ``PID None``)."""
    tl = Timeline()
    fold(tl, snap(T0 + 1, run("a", 50, T0 + 1), alive(50), []))
    tl.add([Event(T0 + 9, "auto-restart", "warning", "auto-restart: restart 1/2 in 1 s")])
    fold(tl, snap(T0 + 10, run("a", 50, T0 + 1, exit_code=3, ended_at=T0 + 8), [], []))
    times = [e.time for e in tl.events]
    assert times == sorted(times), [(e.time, e.kind) for e in tl.events]
    assert [e.kind for e in tl.events][-2:] == ["crash", "auto-restart"]
    ev = fold(tl, snap(T0 + 12, {"id": "b", "dir": f"{ROOT}/b", "launch_error": "x"}, [], []))
    assert ev[0] == ("launched", "launched run b (after a)")
    ev = fold(tl, snap(T0 + 14, {"id": "c", "dir": f"{ROOT}/c", "pid": 80, "pgid": 80}, [], []))
    assert ("crash", "crashed: exit code unknown: the process group vanished (killed)") in ev
