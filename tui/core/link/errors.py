"""The link's one error, in a module of its own: callers that never start a subprocess or an
SSH session (``status`` sampling this machine in-process) can name it without importing asyncio."""

from __future__ import annotations


class TransportError(RuntimeError):
    """The machine could not be reached or the channel broke; the message is for the user."""
