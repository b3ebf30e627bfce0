"""``dflash-tui serve``: the real command serves the app on a free loopback port and
headless Chromium (Debian's ``chromium``) opens it, driven over CDP (tests/cdp.py): the page is
sent the GPU panels of the fake nvidia-smi's seed incident, ``?`` typed in the page opens the
help, the read-only tab offers no launch/kill and ``l`` launches nothing (no run directory
appears), and a request without the token (the page, the websocket) is refused with 403."""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from cdp import Browser, need_chromium
from fakes.scenario import FakeSmi
from supervise_util import cleanup, cli, run_dirs
from support import served as served_url

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path, fake_smi: FakeSmi) -> Iterator[tuple[str, Path]]:
    """``dflash-tui serve`` on a free port: (its URL with the token, its run root)."""
    root = tmp_path / "runs"
    argv = ["serve", "--run-root", str(root), "--interval", "0.5", "--command", "sleep 300",
            "--bind", "127.0.0.1:0"]  # fmt: skip
    try:
        with served_url(argv, r"http://127\.0\.0\.1:\d+/\?token=\S+") as url:
            yield url, root
    finally:
        cleanup(root)


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_browser_shows_the_app_read_only(served: tuple[str, Path], tmp_path: Path) -> None:
    chromium = need_chromium()
    url, root = served

    async def drive() -> None:
        browser = Browser(chromium, tmp_path / "profile")
        try:
            await browser.start()
            await browser.call("Page.navigate", url=url)
            screen = await browser.wait_text("busy-no-memory", 90)  # the seed incident's panels
            for n in range(4):
                assert f"GPU {n}" in screen
            assert "READ-ONLY" in screen
            assert "Launch" not in screen and "Kill" not in screen  # the footer's control keys
            mark = len(browser.frames)
            await browser.key("?")
            help_text = await browser.wait_text("closes this help", 30, since=mark)
            assert "Read-only mode" in help_text
            # the help lines of l, k, r, K (layout.KEYS) are left out
            for line in (
                "returns once the job is seen alive",
                "kill the run's process group",
                "wait for GPU memory release",
                "kill the process selected",
            ):
                assert line not in help_text
            await browser.key("q")  # closes the help
            await asyncio.sleep(1)
            mark = len(browser.frames)
            await browser.key("l")
            await browser.key("?")  # keys still reach the app after l: the help opens again
            await browser.wait_text("closes this help", 30, since=mark)
            await asyncio.sleep(2)
            assert run_dirs(root) == [], "l launched a run from a read-only tab"
        finally:
            await browser.close()

    asyncio.run(drive())


def test_the_page_says_what_it_is_and_takes_keys_without_a_click(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    """The tab is titled and the terminal labelled; once the app is drawn the terminal has
    the keyboard's focus: ``?`` typed with no click opens the help."""
    chromium = need_chromium()
    url, _ = served

    async def drive() -> None:
        browser = Browser(chromium, tmp_path / "profile")
        try:
            await browser.start()
            await browser.call("Page.navigate", url=url)
            await browser.wait_text("busy-no-memory", 90)
            title = await browser.evaluate("document.title")
            label = await browser.evaluate(
                "document.getElementById('terminal').getAttribute('aria-label')"
            )
            assert title == label == "dflash-tui: the training run's monitor", (title, label)
            for _ in range(50):  # the page focuses the terminal once the app is drawn
                active = await browser.evaluate("document.activeElement.className")
                if "xterm-helper-textarea" in active:
                    break
                await asyncio.sleep(0.2)
            assert "xterm-helper-textarea" in active, active
            mark = len(browser.frames)
            await browser.key("?", click=False)
            await browser.wait_text("closes this help", 30, since=mark)
        finally:
            await browser.close()

    asyncio.run(drive())


def test_a_request_without_the_token_is_refused(served: tuple[str, Path]) -> None:
    url, _ = served
    base, token = url.split("/?token=")
    assert status_of(url) == 200
    assert status_of(base + "/") == 403
    assert status_of(base + "/?token=" + "x" * len(token)) == 403
    assert status_of(base + "/static/js/textual.js") == 200  # the page's own script, no data
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    assert f"/ws/{token}" in page  # the page's websocket carries the token in its path

    async def handshake(path: str) -> int:
        async with aiohttp.ClientSession() as session:
            try:
                ws = await session.ws_connect(base.replace("http", "ws") + path)
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status
            await ws.close()
            return 101

    assert asyncio.run(handshake("/ws/" + "x" * len(token))) == 403
    assert asyncio.run(handshake("/ws/")) in (403, 404)
    assert asyncio.run(handshake(f"/ws/{token}?width=80&height=24")) == 101


def test_a_non_loopback_bind_needs_allow_remote(tmp_path: Path) -> None:
    res = cli("serve", "--run-root", str(tmp_path), "--bind", "0.0.0.0:0")
    assert res.returncode == 2 and "not a loopback address: pass --allow-remote" in res.stderr
    bad = cli("serve", "--run-root", str(tmp_path), "--bind", "8765")
    assert bad.returncode == 2 and "expected ADDR:PORT" in bad.stderr


def test_without_textual_serve_it_says_how_to_install(tmp_path: Path) -> None:
    stub = tmp_path / "stub" / "textual_serve"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = dict(os.environ, PYTHONPATH=str(stub.parent))
    res = cli("serve", "--run-root", str(tmp_path), "--bind", "127.0.0.1:0", env=env)
    assert res.returncode == 1 and "pip install 'dflash-tui[serve]'" in res.stderr
