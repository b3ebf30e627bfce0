"""A webhook receiver for the alert tests: http.server on 127.0.0.1 in a thread of the test.

``mode`` says how it answers: ``ok`` (200), ``500``, or ``hang`` (holds the request for
``hang_s`` without answering, as a wedged notifier endpoint would). Every POST body is kept,
parsed as JSON, in ``bodies`` (also for the requests it fails or holds).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, mode: str = "ok", hang_s: float = 20.0) -> None:
        self.mode, self.hang_s = mode, hang_s
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
                code = 500 if outer.mode == "500" else 200
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

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
