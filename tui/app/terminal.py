"""The terminal the app draws on: can it draw here, and the one way the app writes to it
besides its frames.

Can the app draw here? Without a TTY, with ``TERM=dumb`` or with an output encoding that is
not UTF-8 it cannot (its borders, bars and chips are Unicode and its screen is
cursor-addressed): one line says why and names what works there instead. The live app and
``replay`` ask the same question before Textual starts. Served in a browser (Textual's web
driver: ``dflash-tui serve``) there is no TTY, and none is needed.

The app's own sequences (the opt-in bell / OSC 9 / OSC 777 of its alerts) go through the
driver Textual built for the terminal, in its write queue, so they land between two frames
and never inside one (a write of our own to the TTY could cut a frame's escape sequence in
two, as the driver's writer thread writes a frame in several system calls). Textual names
no public accessor for the driver it built (the App keeps it in a private attribute), but
``App.get_driver_class`` and the driver's constructor and ``write`` are public: the class
handed to Textual hands each driver it makes to the app (``announcing_driver``).
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:  # textual is imported only when the app starts
    from textual.app import App
    from textual.driver import Driver

INSTEAD = "`dflash-tui status` (once) or `dflash-tui status --watch`"
NO_TTY = (
    "dflash-tui: the app needs a terminal (stdin and stdout are not a TTY here); "
    f"for scripts and logs use {INSTEAD}"
)


def terminal_problem(
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    env: dict[str, str] | None = None,
    instead: str = INSTEAD,
) -> str | None:
    """Why the app cannot draw here (one line, with what to use instead), or None.
    ``instead`` names what works without one (``replay`` points to ``status --replay``)."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    env = dict(os.environ) if env is None else env
    if env.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):  # served: the browser draws
        return None
    if not (stdin.isatty() and stdout.isatty()):
        return NO_TTY.replace(INSTEAD, instead)
    term = env.get("TERM", "")
    encoding = getattr(stdout, "encoding", None) or "ascii"
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if term == "dumb" or not utf8:
        why = "TERM=dumb" if term == "dumb" else f"encoding {encoding}"
        return (
            f"dflash-tui: this terminal cannot draw the app ({why}); use {instead} "
            "for plain lines, or a UTF-8 terminal (e.g. LANG=C.UTF-8, TERM=xterm-256color)"
        )
    return None


def announcing_driver(base: type[Driver], built: Callable[[Driver], None]) -> type[Driver]:
    """``base`` (the driver class Textual picked for this terminal), made to hand each driver
    Textual builds from it to ``built``; otherwise ``base`` itself."""

    def __init__(self: Driver, app: App[Any], **options: Any) -> None:
        base.__init__(self, app, **options)
        built(self)

    return cast("type[Driver]", type(base.__name__, (base,), {"__init__": __init__}))
