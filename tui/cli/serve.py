"""``dflash-tui serve [COMMON FLAGS] [--bind 127.0.0.1:8765] [--allow-control]``: the app in a
browser, through textual-serve (the ``serve`` extra).

Each browser tab gets its own app process (textual-serve's AppService runs the command with
Textual's web driver), started with the same common flags and ``--read-only`` unless
``--allow-control``. Every tab is a viewer: it defers to a live ``dflash-tui supervise`` as any
app does (docs/app.md, "In a browser"); serve starts no supervisor itself.

Access: loopback by default (another address needs ``--allow-remote``, as ``metrics`` does),
and a random token that every request but the static assets must carry: ``/?token=T`` for the
page, ``/ws/T`` for the websocket the page opens. A websocket whose ``Origin`` is not the page's
own (another site's page) is refused too. Anything else is refused with 403. The page's URLs
are built from the request's Host header, so an SSH tunnel on another local port works. The page
says what it is (a title, a label on the terminal) and focuses the terminal once the app is
drawn, so keys work without a click.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import secrets
import shlex
import signal
import sys
from typing import Any

from dflash_tui.cli.metrics import is_loopback, parse_listen
from dflash_tui.core.base.text import terminal_safe

INSTALL = "pip install 'dflash-tui[serve]' (or: pip install textual-serve)"
# (attribute, flag): the common flags a tab's app is started with, as serve was given them
_VALUE_FLAGS = (
    ("config", "--config"),
    ("host", "--host"),
    ("container", "--container"),
    ("topology", "--topology"),
    ("run_root", "--run-root"),
    ("command", "--command"),
    ("interval", "--interval"),
    ("keep_runs", "--keep-runs"),
    ("theme", "--theme"),
)
_SWITCHES = (
    ("auto_restart", "--auto-restart"),
    ("insecure_accept_new_host_key", "--insecure-accept-new-host-key"),
)


def app_command(args: argparse.Namespace) -> str:
    """The shell command each tab's app runs: this Python, the flags serve was given."""
    words = [sys.executable, "-m", "dflash_tui.cli.main"]
    for attr, flag in _VALUE_FLAGS:
        value = getattr(args, attr, None)
        if value is not None:
            words += [flag, str(value)]
    for path in getattr(args, "log", None) or []:
        words += ["--log", path]
    words += [flag for attr, flag in _SWITCHES if getattr(args, attr, None)]
    if not args.allow_control:
        words.append("--read-only")
    return shlex.join(words)


def token_ok(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def origin_ok(request: Any) -> bool:
    """A websocket's ``Origin`` is this server's own (the page it served, by the address the
    browser used: the Host header, so a tunnel's port works). A browser always sends one; a
    page of another site that learnt the token cannot drive the app. No Origin: not a
    browser, so no other site's page (the token still guards)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    scheme = "https" if request.secure else "http"
    return hmac.compare_digest(origin.encode(), f"{scheme}://{request.host}".encode())


# What the page is, in its tab and to a screen reader: textual-serve's page has no title and
# its terminal no label.
TITLE = "dflash-tui: the training run's monitor"
# textual-serve's terminal takes no key until it is clicked: the page focuses it once the app's
# first bytes are drawn (the body gets -first-byte), and again whenever the window is focused.
FOCUS_SCRIPT = """<script>
(function () {
  function focusTerminal() {
    var input = document.querySelector("#terminal .xterm-helper-textarea");
    if (input && document.body.classList.contains("-first-byte")) { input.focus(); return true; }
    return false;
  }
  var timer = setInterval(function () { if (focusTerminal()) clearInterval(timer); }, 200);
  window.addEventListener("focus", focusTerminal);
})();
</script>"""


def labelled(page: str) -> str:
    """textual-serve's page with a title, a label on its terminal and the focus script."""
    page = page.replace("<head>", f"<head>\n    <title>{TITLE}</title>", 1)
    page = page.replace(
        'id="terminal"', f'id="terminal" role="application" aria-label="{TITLE}"', 1
    )
    return page.replace("</body>", f"{FOCUS_SCRIPT}\n  </body>", 1)


def make_web_app(command: str, token: str) -> Any:
    """The aiohttp application: textual-serve's handlers behind the token check."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    server = Server(command, title="dflash-tui")

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/static/"):  # textual-serve's own JS, CSS, fonts
            return await handler(request)
        given = request.query.get("token", "")
        if request.path.startswith("/ws/"):
            given = request.path[len("/ws/") :]
        if not token_ok(given, token):
            raise web.HTTPForbidden(text="dflash-tui serve: this URL needs the token serve printed")
        if request.path.startswith("/ws/") and not origin_ok(request):
            raise web.HTTPForbidden(text="dflash-tui serve: a websocket from another site")
        return await handler(request)

    async def index(request: web.Request) -> web.Response:
        ws = "wss" if request.secure else "ws"
        http = "https" if request.secure else "http"
        context = {
            "font_size": 16,
            "app_websocket_url": f"{ws}://{request.host}/ws/{token}",
            "config": {"static": {"url": f"{http}://{request.host}/static/"}},
            "application": {"name": "dflash-tui"},
        }
        page = aiohttp_jinja2.render_string("app_index.html", request, context)
        return web.Response(text=labelled(page), content_type="text/html")

    app = web.Application(middlewares=[guard])
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(server.templates_path))
    app.add_routes(
        [
            web.get("/", index),
            web.get("/ws/{token}", server.handle_websocket),
            web.static("/static", server.statics_path),
        ]
    )
    return app


async def serve_app(command: str, addr: str, port: int, token: str) -> int:
    from aiohttp import web

    runner = web.AppRunner(make_web_app(command, token), handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, addr, port)
    await site.start()
    # Stop on a signal from before the URL is printed: whoever reads the URL may stop us at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    bound = runner.addresses[0][1]
    host = f"[{addr}]" if ":" in addr else addr
    url = f"http://{host}:{bound}/?token={token}"
    print(f"dflash-tui serve: open {url}", flush=True)
    print(
        f"dflash-tui serve: from another machine: ssh -L {bound}:{host}:{bound} THIS_HOST, then "
        "open the same URL there; Ctrl-C stops serving (the run keeps running)",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await runner.cleanup()  # closes the websockets: each tab's app ends
    return 0


def run_serve(args: argparse.Namespace) -> int:
    try:
        addr, port = parse_listen(args.bind)
    except ValueError as exc:
        print(terminal_safe(f"dflash-tui serve: {exc}".replace("--listen", "--bind")),
              file=sys.stderr)  # fmt: skip
        return 2
    if not is_loopback(addr) and not args.allow_remote:
        print(
            terminal_safe(
                f"dflash-tui serve: {addr} is not a loopback address: pass --allow-remote to "
                "serve the app beyond this machine (the URL's token is its only guard; no TLS), "
                "or keep loopback and use an SSH tunnel (docs/app.md)"
            ),
            file=sys.stderr,
        )
        return 2
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        print(f"dflash-tui serve: needs textual-serve: {INSTALL}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(serve_app(app_command(args), addr, port, secrets.token_urlsafe(24)))
    except OSError as exc:  # the port is taken, the address is not ours
        print(terminal_safe(f"dflash-tui serve: cannot listen on {args.bind}: {exc}"),
              file=sys.stderr)  # fmt: skip
        return 1
