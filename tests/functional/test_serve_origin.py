"""``dflash-tui serve`` takes a websocket only from its own page: a request that carries the
token but another site's ``Origin`` is refused with 403 (a real server, a real HTTP client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from support import served as served_url


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The URL (with its token) of ``dflash-tui serve`` on a free loopback port."""
    argv = ["serve", "--run-root", str(tmp_path / "runs"), "--bind", "127.0.0.1:0"]
    with served_url(argv, r"http://127\.0\.0\.1:\d+/\?token=\S+") as url:
        yield url


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
