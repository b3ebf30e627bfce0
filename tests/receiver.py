"""A webhook receiver for the alert tests: http.server on 127.0.0.1 in a thread of the test.

``mode`` says how it answers: ``ok`` (200), ``500``, ``hang`` (holds the request for
``hang_s`` without answering, as a wedged notifier endpoint would), ``trickle`` (the status
line, then the rest of its head one byte every ``trickle_s`` for ``hang_s``: a per-read
timeout longer than ``trickle_s`` never fires) or ``trickle-body`` (a whole head, then the body
one byte every ``trickle_s``). Every POST body is kept, parsed as JSON, in ``bodies`` (also
for the requests it fails or holds).

``python tests/receiver.py MODE [HANG_S [TRICKLE_S]]`` runs one in a process of its own (its
URL on the first line of stdout), so that a test can count its own threads without the
receiver's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, mode: str = "ok", hang_s: float = 20.0, trickle_s: float = 1.0) -> None:
        self.mode, self.hang_s, self.trickle_s = mode, hang_s, trickle_s
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with outer.lock:
                    outer.bodies.append(body)
                if outer.mode == "hang":
                    time.sleep(outer.hang_s)
                    return
                if outer.mode.startswith("trickle"):
                    self._trickle()
                    return
                code = 500 if outer.mode == "500" else 200
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def _trickle(self) -> None:
                if outer.mode == "trickle":
                    head = b"HTTP/1.1 200 OK\r\nX-Slow: "
                else:
                    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
                end = time.monotonic() + outer.hang_s
                try:
                    self.wfile.write(head)
                    while time.monotonic() < end:
                        self.wfile.write(b"x")
                        time.sleep(outer.trickle_s)
                except OSError:  # the sender gave up and closed
                    return

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def codes(self) -> list[str]:
        with self.lock:
            return [b["alert"]["code"] for b in self.bodies]

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def receiver_process(mode: str, hang_s: float = 20.0, trickle_s: float = 1.0) -> Iterator[str]:
    """A receiver in ``mode`` in a process of its own (this file run as a script), so that its
    threads are not the caller's; its URL. The process is ended by its handle on exit."""
    argv = [sys.executable, __file__, mode, str(hang_s), str(trickle_s)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    times = [float(x) for x in sys.argv[2:4]]
    with Receiver(sys.argv[1], *times) as rx:
        print(rx.url, flush=True)
        rx.thread.join()
