"""Bytes to lines, a chunk at a time, under a cap: a line over the cap is dropped as it
streams and stands as its size, so memory never holds more than one capped line whatever the
other side sends (a probe's stdout, a recorded segment)."""

from __future__ import annotations

from collections.abc import Iterator


class LineSplitter:
    """Feed chunks; take each line they end (without its newline), or for a line over ``cap``
    its size in bytes (an int: nothing of it is kept)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()  # the line begun and not yet ended
        self.over = 0  # bytes of the line being dropped (0: none)

    def feed(self, data: bytes) -> Iterator[bytes | int]:
        start = 0
        while (nl := data.find(b"\n", start)) >= 0:
            part, start = data[start:nl], nl + 1
            if self.over:
                yield self.over + len(part)
            else:
                yield bytes(self.buf) + part if self.buf else part
            self.buf.clear()
            self.over = 0
        rest = data[start:]
        if self.over or len(self.buf) + len(rest) > self.cap:
            self.over += len(self.buf) + len(rest)
            self.buf.clear()
        else:
            self.buf += rest

    @property
    def pending(self) -> int:
        """Bytes of the line begun and not ended (kept or dropped)."""
        return len(self.buf) + self.over

    def end(self) -> bytes | int | None:
        """The last line when the stream ends without a newline (its bytes, or its size when
        over the cap), else None."""
        if self.over:
            return self.over
        return bytes(self.buf) if self.buf else None
