"""The app at 80x24, the smallest size supported: the confirm dialogs keep their buttons on
screen (long bodies scroll inside), the footer keeps ``?`` and ``q``, a problem GPU scrolled
out of the grid is named in the header, and the header keeps the run's state, id and uptime
first however many fields it has (auto-restart on, at 120x40 too)."""

from __future__ import annotations

import dataclasses

import pytest
from rich.text import Text
from support import until
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Button, Footer

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.control.confirm import ConfirmScreen
from dflash_tui.app.host.gpus.grid import GpuGrid
from dflash_tui.app.host.header import RunHeader
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.keys.footer import KEY as FOOTER_KEY
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

SMALL = (80, 24)
LONG_COMMAND = "python3 -m dflash_train.train " + " ".join(f"--opt{i} value{i}" for i in range(60))


def make_app(snaps: list[Snapshot], command: str | None = None) -> DflashApp:
    cfg = Config(hosts=(HostConfig(command=command),)) if command else Config()
    return DflashApp(cfg, source=ScriptedSource(snaps))


async def settle(pilot: Pilot, app: DflashApp, n: int) -> None:
    await until(pilot, lambda: app.samples >= n)
    await pilot.pause(0.2)  # the header's check of the grid runs after a refresh


def header_lines(app: DflashApp) -> list[str]:
    return str(app.screen.query_one(RunHeader).render()).split("\n")


async def open_dialog(pilot: Pilot, app: DflashApp, key: str) -> ConfirmScreen:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    await pilot.pause(0.1)
    assert isinstance(app.screen, ConfirmScreen)
    return app.screen


def assert_buttons_on_screen(dialog: ConfirmScreen) -> None:
    screen = Region(0, 0, *SMALL)
    box = dialog.query_one("#confirm-box")
    assert screen.contains_region(box.region), box.region  # no edge cut, right one included
    for button in dialog.query(Button):
        assert button.region.height == 3, button.region  # the whole button, not its top edge
        assert box.region.contains_region(button.region), (button.id, button.region)
    assert "(y)" in str(dialog.query_one("#yes", Button).label)
    assert "(n/esc)" in str(dialog.query_one("#no", Button).label)
    assert dialog.focused is dialog.query_one("#no", Button)  # enter alone destroys nothing
    title = dialog.query_one(".title")
    assert box.region.contains_region(title.region)


def many_members(snap: Snapshot, n: int) -> Snapshot:
    """The healthy scene's run with ``n`` more processes in its group."""
    worker = next(p for p in snap.procs if p.pid == 4243)
    extra = tuple(
        dataclasses.replace(worker, pid=7000 + i, ppid=4243, start_ticks=8000 + i) for i in range(n)
    )
    return dataclasses.replace(snap, procs=(*snap.procs, *extra))


@pytest.mark.parametrize(
    ("key", "close", "needles"),
    [
        ("k", "n", ("4242", "GPUs held")),  # kill
        ("r", "escape", ("launch again", "A new run id")),  # restart
    ],
)
async def test_confirm_dialogs_show_their_buttons_at_80x24(
    key: str, close: str, needles: tuple[str, ...]
) -> None:
    snaps = scenes.healthy_run(samples=2)
    app = make_app(snaps)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, 2)
        dialog = await open_dialog(pilot, app, key)
        assert_buttons_on_screen(dialog)
        body = str(dialog.query_one("#confirm-body").render())
        assert all(n in body for n in needles), body
        await pilot.press(close)
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))


async def test_a_long_dialog_body_scrolls_inside_and_keeps_the_buttons() -> None:
    snaps = [many_members(s, 30) for s in scenes.healthy_run(samples=2)]
    app = make_app(snaps, command=LONG_COMMAND)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, 2)
        dialog = await open_dialog(pilot, app, "r")
        assert_buttons_on_screen(dialog)
        body = dialog.query_one("#confirm-body")
        assert "… and 21 more" in str(body.render())  # 33 members: 12 listed
        scroll = body.parent
        assert scroll is not None and scroll.max_scroll_y > 0  # type: ignore[attr-defined]
        assert "scroll" in str(dialog.query_one("#confirm-box").border_subtitle)
        await pilot.press("down", "down")
        await until(pilot, lambda: scroll.scroll_y > 0)  # type: ignore[attr-defined]
        assert dialog.focused is dialog.query_one("#no", Button)  # scrolling kept the focus
        assert_buttons_on_screen(dialog)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert not app.control.waits_active()


async def test_a_wrapped_title_still_leaves_room_for_the_buttons() -> None:
    app = make_app(scenes.healthy_run(samples=1))
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, 1)
        host = "gpu-node-" + "long-" * 24  # a title over two lines at 80 columns
        body = Text("\n".join(f"line {i}" for i in range(60)))
        app.push_screen(ConfirmScreen(f"Kill run 20251202-095500-1a2b on {host}?", body, "Kill"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause(0.1)
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert dialog.query_one(".title").region.height >= 2
        assert_buttons_on_screen(dialog)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))


@pytest.mark.parametrize("width", [80, 100, 120, 160])
async def test_the_footer_shows_whole_key_labels_only(width: int) -> None:
    """Every key the footer shows ends before the palette's key: a label that would not fit
    whole is left out ("tab Are…" at 120 columns was cut mid-word), help and quit stay, and a
    key left out at 120 columns comes back when the terminal grows."""
    app = make_app(scenes.healthy_run(samples=1))
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot, app, 1)
        await pilot.pause(0.2)
        footer = app.screen.query_one(Footer)
        keys = list(footer.query(FOOTER_KEY))
        palette = next(k for k in keys if k.has_class("-command-palette"))
        shown = [k for k in keys if k.display and k is not palette]
        assert {"question_mark", "q"} <= {k.key for k in shown}
        for k in shown:
            assert k.region.right <= palette.region.x, (k.key, k.region, palette.region)
        dropped = [k.key for k in keys if not k.display]
        assert all(not k.display for k in keys[keys.index(shown[-1]) + 1 : -1]), dropped
        if width == 120:
            assert "tab" in dropped, dropped
            await pilot.resize_terminal(200, 30)
            await pilot.pause(0.3)
            assert all(k.display for k in footer.query(FOOTER_KEY))


async def test_footer_keeps_help_and_quit_at_80x24_and_help_lists_every_key() -> None:
    snaps = scenes.healthy_run(samples=1)
    app = make_app(snaps)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, 1)
        footer = app.screen.query_one(Footer)
        keys = {k.key: k for k in footer.query(FOOTER_KEY)}
        palette = next(k for k in keys.values() if k.has_class("-command-palette"))
        for key in ("question_mark", "q"):
            region = keys[key].region
            assert Region(0, 0, *SMALL).contains_region(region), (key, region)
            assert region.right <= palette.region.x, (key, region)  # not under ^p palette
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one("#help-body").render())
        for key, what in (
            ("l", "launch the run"),
            ("k", "kill the run"),
            ("r", "kill, wait"),
            ("K", "kill the process"),
            ("A", "auto-restart"),
            ("/", "edit the log filter"),
            ("a", "show all log lines"),
            ("f", "follow"),
            ("tab", "move between areas"),
            ("t", "next theme"),
            ("e", "switch the process tree"),
            ("?", "this help"),
            ("q", "quit the app"),
            ("esc", "close the filter box"),
            ("ctrl+p", "command palette"),
        ):
            assert f" {key}  {what}" in text, key


async def test_seed_incident_at_80x24_names_the_problem_gpu_out_of_sight() -> None:
    snaps = scenes.seed_incident()
    app = make_app(snaps)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, len(snaps))
        grid = app.screen.query_one(GpuGrid)
        assert grid.compact  # 80x24 shows one line per GPU; `c` asks for the panels
        await pilot.press("c")
        await until(pilot, lambda: not grid.compact and grid.board.region.area > 0)
        await pilot.pause(0.2)
        viewport = grid.scrollable_content_region
        assert not viewport.contains_region(grid.region_of(7))  # GPU 7 is below
        assert viewport.contains_region(grid.region_of(2))
        hint = header_lines(app)[1]
        assert "GPU 7 busy-no-memory" in hint and "↓" in hint and "GPUs 2" not in hint
        grid.scroll_end(animate=False)  # now 2 and 3 are above, 7 in sight
        await until(pilot, lambda: "↑" in header_lines(app)[1])
        hint = header_lines(app)[1]
        assert "GPUs 2, 3" in hint and "GPU 7" not in hint and "↓" not in hint


async def test_no_hint_when_every_gpu_is_in_sight() -> None:
    snaps = scenes.seed_incident()
    app = make_app(snaps)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app, len(snaps))
        line = header_lines(app)[1]
        assert "↓" not in line and "off-screen" not in line and "3 warnings" in line


async def test_header_keeps_run_state_id_and_uptime_first_with_auto_restart() -> None:
    snaps = scenes.healthy_run(samples=2)
    for size in ((120, 40), SMALL):
        app = make_app(snaps)
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app, 2)
            header = app.screen.query_one(RunHeader)
            header.show_auto("on")
            await pilot.pause(0.05)
            top = header_lines(app)[0]
            assert top.split()[:2] in (["run", "RUNNING"], ["RUNNING", "20251202-095500-1a2b"])
            assert "20251202-095500-1a2b  up " in top, top
            assert "auto-restart on" in top or "│ AR" in top, top
            assert "…" not in top and len(top) <= size[0] - 2, top  # fitted, not cut
            if size == SMALL:
                assert "│ AR" in top or "auto-restart on" in top
            else:
                assert "PID 4242 PGID 4242" in top, top


async def test_header_keeps_the_exit_meaning_at_80x24() -> None:
    snap = scenes.healthy_run(samples=1)[0]
    run = dataclasses.replace(snap.run, exit_code=143)  # type: ignore[arg-type]
    gone = tuple(p for p in snap.procs if p.pgid != 4242)
    app = make_app([dataclasses.replace(snap, run=run, procs=gone, gpu_procs=())])
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app, 1)
        top = header_lines(app)[0]
        assert "20251202-095500-1a2b  exit 143: killed by signal 15 (SIGTERM)" in top, top
        assert len(top) <= SMALL[0] - 2, top
        app.screen.query_one(RunHeader).show_auto("fatal")  # less room: the code stays
        await pilot.pause(0.05)
        top = header_lines(app)[0]
        assert "20251202-095500-1a2b  exit 143" in top and "FATAL" in top, top
        assert len(top) <= SMALL[0] - 2, top
