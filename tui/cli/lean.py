"""The app's process without what it never uses: asyncio's TLS support.

asyncio imports ``ssl`` when it is imported (for TLS connections made by the event loop), and
with it OpenSSL's libssl and libcrypto: about 4 MiB of the app's resident memory here. The app
makes no TLS connection through asyncio: SSH is asyncssh's own protocol over a plain socket,
and a webhook posts with urllib in a thread. So asyncio is imported once with ``ssl`` hidden
(its loops then hold ``ssl = None``, as on a Python built without OpenSSL), and ``ssl`` is
importable again at once for whatever asks for it later (an https webhook's urllib).
Only the app's own command does this; ``serve`` (aiohttp) and the others import as usual.
"""

from __future__ import annotations

import sys


def asyncio_without_tls() -> None:
    """Import asyncio with ``ssl`` hidden; nothing happens if either is imported already."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError
    try:
        import asyncio  # noqa: F401  # its modules bind ssl = None for good
    finally:
        del sys.modules["ssl"]
