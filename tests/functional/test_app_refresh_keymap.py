"""Keys: `R` samples the host now (not at the interval), the config's `[keys]`
remaps the app's keys through Textual's keymap, and the empty log area names only keys that
work (none in read-only mode)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import screen_text, until
from textual.widgets import Static

from dflash_tui.app import scenes
from dflash_tui.app.app import DflashApp
from dflash_tui.app.host.source import ScriptedSource
from dflash_tui.app.keys.keymap import binding_ids, keymap_problems
from dflash_tui.app.screens.help import HelpScreen
from dflash_tui.core.base.config import ConfigError, load_file
from dflash_tui.core.base.config_keys import KEY_IDS
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot

SIZE = (120, 40)
INTERVAL = 120.0  # the stream's next sample is two minutes away: any sooner is the key's


async def test_refresh_key_brings_a_new_sample_well_before_the_interval(tmp_path: Path) -> None:
    """The real probe, locally: after the first sample a new process starts; `R` brings a
    sample that shows it within seconds, where the stream's next one is 120 s away."""
    host = HostConfig(run_root=str(tmp_path / "runs"))
    app = DflashApp(Config(hosts=(host,), interval=INTERVAL))
    newcomer = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.samples >= 1, timeout=30)
            await pilot.pause(1.0)
            assert app.samples == 1  # the stream gives one sample, then waits its interval
            newcomer = subprocess.Popen(["sleep", "300"])
            first = app.current.snapshot
            assert first is not None and newcomer.pid not in {p.pid for p in first.procs}
            t0 = time.monotonic()
            await pilot.press("R")
            await until(pilot, lambda: app.samples >= 2, timeout=30)
            took = time.monotonic() - t0
            snap = app.current.snapshot
            assert snap is not None and snap.time > first.time
            assert newcomer.pid in {p.pid for p in snap.procs}  # read now, not replayed
            assert took < INTERVAL / 4, took
            assert snap.interval == INTERVAL  # still judged against the stream's interval
            assert "R Refresh" in screen_text(app)  # the footer shows the key
    finally:
        if newcomer is not None:
            newcomer.kill()
            newcomer.wait()


async def test_refresh_on_recorded_samples_says_there_is_nothing_to_ask() -> None:
    snaps = scenes.healthy_run()
    app = DflashApp(Config(), source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        await pilot.press("R")
        await pilot.pause(0.3)
        assert app.samples == len(snaps)
        assert any("nothing to ask" in str(n.message) for n in app._notifications)


# -- [keys] --


def write_config(tmp_path: Path, keys: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f"[keys]\n{keys}\n")
    return path


def test_binding_ids_of_the_config_are_the_apps() -> None:
    assert set(KEY_IDS) == binding_ids()


def test_unknown_binding_id_and_bad_key_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'keys.folow' \(did you mean 'keys.follow'"):
        load_file(write_config(tmp_path, 'folow = "F"'))
    with pytest.raises(ConfigError, match=r"keys\.follow: 'two words' is not a key"):
        load_file(write_config(tmp_path, 'follow = "two words"'))
    with pytest.raises(ConfigError, match=r"keys\.follow must be a key name"):
        load_file(write_config(tmp_path, "follow = 3"))
    cfg = load_file(write_config(tmp_path, 'follow = "F"\nrefresh = ["ctrl+r", "f5"]'))
    assert cfg.keys == (("follow", "F"), ("refresh", "ctrl+r,f5"))


def test_a_key_two_bindings_would_share_is_refused() -> None:
    assert keymap_problems((("follow", "F"),)) == []
    assert keymap_problems((("launch", "k"), ("kill", "x"))) == []  # k is free again
    assert keymap_problems((("launch", "k"),)) == ["keys.launch: 'k' is kill's key too"]
    assert keymap_problems((("follow", "x"), ("wrap", "x"))) != []


def test_the_app_refuses_a_clashing_keymap_before_it_starts(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'launch = "k"')
    res = subprocess.run(
        [sys.executable, "-m", "dflash_tui.cli.main", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 2
    assert "keys.launch: 'k' is kill's key too" in res.stderr


async def test_a_remapped_key_acts_and_the_old_one_does_not(tmp_path: Path) -> None:
    cfg = load_file(write_config(tmp_path, 'follow = "F"\nhelp = "f1"'))
    snaps = scenes.healthy_run()
    app = DflashApp(cfg, source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        area = app.detail().logs()
        assert area.follow
        await pilot.press("f")  # the old key: nothing
        await pilot.pause(0.2)
        assert area.follow
        await pilot.press("F")
        await until(pilot, lambda: not area.follow)
        await pilot.press("F")
        await until(pilot, lambda: area.follow)
        assert "F Follow" in screen_text(app)  # the footer shows the user's key
        await pilot.press("question_mark")  # help moved to f1: ? opens nothing
        await pilot.pause(0.2)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        body = str(app.screen.query_one("#help-body", Static).render())
        follow = next(line for line in body.splitlines() if "end of the logs" in line)
        assert follow.split()[0] == "F", follow


# -- the empty log area --


def bare() -> list[Snapshot]:
    return [Snapshot(time=1_700_000_000.0 + i) for i in range(2)]


@pytest.mark.parametrize(
    ("read_only", "keys", "says", "never"),
    [
        (False, (), "press l to launch", None),
        (False, (("launch", "L"),), "press L to launch", "press l"),
        (True, (), "once it starts", "press"),
    ],
)
async def test_empty_log_area_names_only_keys_that_work(
    read_only: bool, keys: tuple[tuple[str, str], ...], says: str, never: str | None
) -> None:
    app = DflashApp(Config(read_only=read_only, keys=keys), source=ScriptedSource(bare()))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= 2)
        text = str(app.detail().query_one("#no-logs", Static).render())
        assert says in text, text
        if never is not None:
            assert never not in text, text


async def test_two_bindings_may_swap_their_keys(tmp_path: Path) -> None:
    cfg = load_file(write_config(tmp_path, 'follow = "W"\nwrap = "f"'))
    assert keymap_problems(cfg.keys) == []
    snaps = scenes.healthy_run()
    app = DflashApp(cfg, source=ScriptedSource(snaps))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.samples >= len(snaps))
        area = app.detail().logs()
        assert area.follow and not area.wrap
        await pilot.press("W")
        await until(pilot, lambda: not area.follow)
        assert not area.wrap
        await pilot.press("f")
        await until(pilot, lambda: area.wrap)
        assert not area.follow
