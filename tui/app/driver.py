"""The terminal driver: Textual's Linux driver, with an input thread that sleeps until a key
comes instead of waking ten times a second (issue 16).

Textual's input thread polls the terminal every 0.1 s whatever happens, only so that its
parser can time out a lone Escape (an Escape byte may start a longer key sequence). Those
wakeups cost this app about 1.5 ms of CPU a second on a 2-core machine, as much as a GPU
panel's redraw (docs/internals.md, "Issue 16, the 2026-12-04 third round"). Here the thread
waits 0.1 s only while the parser holds such a byte, and otherwise until a key, a resize
report or the exit comes: setting the exit event also writes to a pipe the thread waits on.
The pipe is the driver's for its whole life (made with it, closed with it), so no write can
reach a file descriptor closed and reused meanwhile. Everything else is Textual's (textual
is pinned exactly; the loop below follows ``LinuxDriver.run_input_thread`` of that
version)."""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

ESCAPE_WAIT = 0.1  # seconds, as Textual: how soon a lone Escape is a key of its own


class _WakingEvent(threading.Event):
    """The driver's exit event: setting it also wakes the input thread's wait."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self.wake_fd: int | None = wake_fd  # None once the driver is closed

    def set(self) -> None:
        super().set()
        fd = self.wake_fd
        if fd is not None:
            with contextlib.suppress(OSError):  # full (a wake is pending anyway)
                os.write(fd, b"\0")


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` whose input thread blocks while no key is half-read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)  # setting the event never blocks
        self._waking = self.exit_event = _WakingEvent(wake_w)

    def run_input_thread(self) -> None:
        selector = selectors.SelectSelector()
        try:
            selector.register(self.fileno, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            self._read_input(selector, self._wake_r)
        finally:
            selector.close()

    def close(self) -> None:
        super().close()
        wake_w, self._waking.wake_fd = self._waking.wake_fd, None
        if wake_w is not None:  # the input thread was joined before (stop_application_mode)
            os.close(wake_w)
            os.close(self._wake_r)

    def _read_input(self, selector: selectors.BaseSelector, wake_r: int) -> None:
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def process(ready: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            keys = [key for key, _mask in ready if key.fd == self.fileno]
            for key in keys:
                data = decode(os.read(key.fd, 1024 * 4), final=final)
                if not data:  # stdin piped and at its end
                    break
                for event in parser.feed(data):
                    self.process_message(event)
            if any(key.fd == wake_r for key, _mask in ready):
                os.read(wake_r, 64)
            for event in parser.tick():
                self.process_message(event)

        while not self.exit_event.is_set():
            process(selector.select(_wait(parser)))
        selector.unregister(self.fileno)
        process(selector.select(ESCAPE_WAIT), final=True)
        with contextlib.suppress(Exception):  # Textual's own end of input, as its driver does
            for _event in parser.feed(""):
                pass


def _wait(parser: XTermParser) -> float | None:
    """How long the input thread may sleep: until input, unless the parser holds a partial
    sequence (then Textual's 0.1 s, after which a lone Escape is a key)."""
    pending = getattr(parser, "_timeout_time", 0.0)  # textual's Parser: None while idle
    return None if pending is None else ESCAPE_WAIT


def quiet_driver(cls: type[Driver]) -> type[Driver]:
    """The driver to use for Textual's choice ``cls``: this one in place of its Linux driver
    (a headless test, the web view or ``TEXTUAL_DRIVER`` keep theirs)."""
    return QuietLinuxDriver if cls is LinuxDriver else cls
