"""Helpers shared by the Pilot tests (tests/ is on sys.path through tests/conftest.py)."""

from __future__ import annotations

import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widget import Widget

ROOT = Path(__file__).resolve().parents[1]


async def until(
    pilot: Pilot,
    cond: Callable[[], bool],
    timeout: float = 20.0,
    say: Callable[[], object] | None = None,
) -> None:
    """Let the app run until ``cond()`` holds; fail the test after ``timeout`` seconds, with
    what ``say()`` tells then (the state that explains why, such as a timeline)."""
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"condition not met in {timeout:g}s: {say() if say else ''}")
        await pilot.pause(0.02)


async def open_kill_process_dialog(
    pilot: Pilot, app: Any, pid: int, signal: str = "TERM", tree: Any = None
) -> str:
    """Select ``pid`` in the process tree as a user would (the whole machine with ``w``, as
    the tree shows only the run's processes and GPU holders at first; open the way to it),
    press K, choose ``signal`` in the menu, and return the confirm dialog's text. ``tree``:
    the host's process tree where the screen holds several (the first one otherwise)."""
    from dflash_tui.app.host.procs.tree import ProcTree

    if tree is None:
        tree = app.screen.query_one(ProcTree)
    await until(pilot, lambda: app.samples >= 1)
    if not tree.whole:
        await pilot.press("w")
    await until(pilot, lambda: pid in tree.nodes)
    node = tree.nodes[pid]
    parent = node.parent
    while parent is not None:
        parent.expand()
        parent = parent.parent
    await pilot.pause(0.1)
    tree.move_cursor(node)
    await pilot.pause(0.05)
    await pilot.press("K")
    await pick_signal(pilot, app, signal)
    return str(app.screen.query_one("#confirm-body").render())


async def pick_signal(pilot: Pilot, app: Any, choice: str | None) -> list[str]:
    """After K: choose ``choice`` in the process menu as a user would (arrows, enter) and wait
    for the confirm; the menu's choices are returned. A process control refuses gets no menu:
    the refusal dialog comes at once (then nothing is chosen). ``choice`` None: esc."""
    from dflash_tui.app.control.confirm import ConfirmScreen
    from dflash_tui.app.control.signals import SignalMenu

    await until(pilot, lambda: isinstance(app.screen, (ConfirmScreen, SignalMenu)))
    if isinstance(app.screen, ConfirmScreen):
        return []
    menu = app.screen.query_one("#signal-menu")
    ids = [menu.get_option_at_index(i).id for i in range(menu.option_count)]
    if choice is None:
        await pilot.press("escape")
        return ids
    for _ in range(ids.index(choice)):
        await pilot.press("down")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    return ids


def config_file(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    """A config file of ``text`` in ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def require_busybox() -> str:
    """busybox's path; a test that needs it skips where it is missing, except under CI (env CI
    set), where that is a failure: .ci/run installs it (as the loopback sshd tests do)."""
    bb = shutil.which("busybox")
    if bb is None:
        why = "busybox is not installed (.ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the busybox tests: {why}", pytrace=False)
        pytest.skip(why)
    return bb


def busybox_bin(tmp_path: Path) -> Path:
    """A folder of BusyBox applets only (sh, setsid, kill, date ...), as on a minimal image."""
    bb = require_busybox()
    bin_dir = tmp_path / "bb"
    bin_dir.mkdir()
    for name in subprocess.run([bb, "--list"], capture_output=True, text=True).stdout.split():
        (bin_dir / name).symlink_to(bb)
    return bin_dir


def proc_files(part: str) -> Iterator[tuple[int, bytes]]:
    """``(pid, /proc/PID/<part>)`` for each process whose file can be read now (one that ends
    meanwhile is skipped)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            yield int(entry.name), (entry / part).read_bytes()
        except OSError:
            continue


def live_group(pgid: int) -> list[int]:
    """Live (non-zombie) members of a process group, read from /proc (a zombie left for init
    to reap still answers kill -0)."""
    out = []
    for pid, stat in proc_files("stat"):
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            out.append(pid)
    return out


def processes_naming(text: str, part: str = "cmdline") -> list[str]:
    """``"PID: command line"`` of each live (non-zombie) process whose /proc/PID/``part``
    (``cmdline`` or ``environ``, NUL-separated) holds ``text``: the processes of a run, found
    by a path inside its folder or by its marker (``DFLASH_RUN_DIR=<dir>\\0`` in environ)."""
    found = []
    for pid, data in proc_files(part):
        if text.encode() not in data:
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(b")", 1)[-1].split()[:1] != [b"Z"]:
            words = cmd.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {words}")
    return found


def screen_text(app: Any) -> str:
    """What the terminal shows now, as plain text lines (what a user reads)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, color_system=None
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text(styles=False)


@contextmanager
def served(argv: list[str], url_regex: str, timeout: float = 20.0) -> Iterator[str]:
    """``dflash-tui ARGV`` (a server: serve, metrics) in a session of its own: the URL that
    ``url_regex`` finds on its first stdout line. Fails with its stderr where no URL comes;
    on exit its session is sent SIGTERM, and it must end cleanly (0) within ``timeout``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        url = re.search(url_regex, line)
        if url is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)
            raise AssertionError(f"no URL on stdout: {line!r}; stderr: {proc.stderr.read()}")
        yield url.group()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout)
    assert code == 0, proc.stderr.read()


class LineCaches:
    """The caches of the lines widgets drew, by weak reference, to see what removed widgets
    leave behind. Textual keeps one a widget (``_styles_cache``, a private attribute: the tests
    only look at it) and keeps up to 1024 of them alive after their widgets are gone (an
    ``lru_cache`` on one of their methods, Textualize/textual#6665): the app empties them
    before a removal (tui/app/widgets/removal.py). The check is of the caches themselves, not of
    a count of lines alive, which other tests' widgets leaving that ``lru_cache`` would move."""

    def __init__(self) -> None:
        self.taken: dict[int, tuple[str, weakref.ref[Widget], weakref.ref[Any]]] = {}

    def take(self, root: Widget) -> None:
        """Every widget under ``root`` (itself too) and its scroll bars, once each."""
        # Found here, not by the app's own walk (removal.py ``drawing_widgets``): a widget
        # that walk missed must still be looked at.
        for widget in root.walk_children(Widget, with_self=True):
            bars = [widget.vertical_scrollbar] if widget.show_vertical_scrollbar else []
            bars += [widget.horizontal_scrollbar] if widget.show_horizontal_scrollbar else []
            for w in [widget, *bars]:
                if id(w) not in self.taken:
                    cache = w._styles_cache
                    self.taken[id(w)] = (type(w).__name__, weakref.ref(w), weakref.ref(cache))

    def with_lines(self) -> int:
        """How many of the caches taken hold lines now (those of widgets alive and drawn)."""
        return sum(1 for _, _, c in self.taken.values() if (x := c()) is not None and x._cache)

    def removed(self) -> int:
        """How many of the widgets taken are gone (freed)."""
        gc.collect()
        return sum(1 for _, w, _ in self.taken.values() if w() is None)

    def left_with_lines(self) -> list[str]:
        """The widgets gone whose caches are still alive with lines in them."""
        gc.collect()
        return [
            name
            for name, w, c in self.taken.values()
            if w() is None and (x := c()) is not None and x._cache
        ]
