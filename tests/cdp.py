"""Headless Chromium driven through its DevTools protocol (CDP), with aiohttp's websocket
client (textual-serve brings aiohttp): open a page, type keys, and read what the page's
websockets received.

textual-serve's page draws the terminal on a canvas (xterm.js), so its text is not in the DOM;
the app's output reaches the page as websocket frames, which CDP's Network domain reports
(``Network.webSocketFrameReceived``). ``screen_text`` is those frames with the terminal's
escape sequences removed: the text the page was given to draw.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CHROMIUM = "chromium"
_ESC = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|.)")


def need_chromium() -> str:
    """The chromium binary; under CI (env CI set) its absence fails the test, else skips it."""
    path = shutil.which(CHROMIUM)
    if path is None:
        why = "chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {why}", pytrace=False)
        pytest.skip(why)
    return path


class Browser:
    """One headless Chromium with one page, driven over CDP."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary, self.profile = binary, profile
        self.proc: subprocess.Popen[bytes] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.frames: list[str] = []  # what the page's websockets received, decoded
        self.reader: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 60) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--window-size=1600,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        port_file = self.profile / "DevToolsActivePort"
        t0 = time.monotonic()
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() - t0 > timeout or self.proc.poll() is not None:
                raise AssertionError("chromium did not open its DevTools port")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as resp:
            pages = [t for t in await resp.json() if t["type"] == "page"]
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        await self.call("Network.enable")
        await self.call("Page.enable")

    async def _read(self) -> None:
        assert self.ws is not None
        async for msg in self.ws:
            data = msg.json()
            if "id" in data:
                fut = self.pending.pop(data["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(data)
            elif data.get("method") == "Network.webSocketFrameReceived":
                resp = data["params"]["response"]
                raw = resp["payloadData"]
                text = base64.b64decode(raw) if resp["opcode"] == 2 else raw.encode()
                self.frames.append(text.decode("utf-8", "replace"))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        i = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[i] = fut
        await self.ws.send_json({"id": i, "method": method, "params": params})
        data = await asyncio.wait_for(fut, 30)
        if "error" in data:
            raise AssertionError(f"CDP {method}: {data['error']}")
        return data.get("result", {})

    def screen_text(self, since: int = 0) -> str:
        """Everything the page was sent to draw from frame ``since`` on, without escapes."""
        return _ESC.sub("", "".join(self.frames[since:]))

    async def wait_text(self, wanted: str, timeout: float, since: int = 0) -> str:
        t0 = time.monotonic()
        while wanted not in (text := self.screen_text(since)):
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"not on the page in {timeout:g}s: {wanted!r}\n{text[-3000:]}")
            await asyncio.sleep(0.2)
        return text

    async def key(self, char: str, click: bool = True) -> None:
        """One printable key, as a person types it (keydown with its text, then keyup), into
        xterm.js's input (its hidden textarea, focused first as a click would, unless
        ``click`` is False: then wherever the page has its focus)."""
        if click:
            await self.call(
                "Runtime.evaluate",
                expression="document.querySelector('.xterm-helper-textarea').focus()",
            )
        await self.call("Input.dispatchKeyEvent", type="keyDown", key=char, text=char)
        await self.call("Input.dispatchKeyEvent", type="keyUp", key=char)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
