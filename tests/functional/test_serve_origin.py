"""``dflash-tui serve`` takes a websocket only from its own page: a request that carries the
token but another site's ``Origin`` is refused with 403 (a real server, a real HTTP client)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The URL (with its token) of ``dflash-tui serve`` on a free loopback port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dflash_tui.cli.main", "serve", "--run-root",
         str(tmp_path / "runs"), "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert url, line
        yield url.group()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


async def handshake(url: str, origin: str) -> int:
    """The status of a websocket handshake to serve's app socket with ``origin``."""
    base, token = url.split("/?token=")
    ws = base.replace("http://", "ws://") + f"/ws/{token}"
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(ws, origin=origin) as sock:
                await sock.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def test_a_websocket_from_another_origin_is_refused(served: str) -> None:
    assert await handshake(served, "http://evil.example") == 403
    own = served.split("/?token=")[0]
    assert await handshake(served, own) == 101  # its own page's origin is let in
