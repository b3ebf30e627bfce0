"""One JSON POST under a total deadline: connect, TLS, send and the answer's head together
take at most ``timeout`` seconds, whatever the receiver does.

urllib's timeout is per read: a receiver that sends one byte a second never reaches it, and
the thread sending waits for ever. Here every read is given only what is left of the deadline,
and the answer is read only up to its head (the status is all an alert needs), so a send ends
in time. The proxies of the environment (``https_proxy``, ``http_proxy``, ``no_proxy``) are
used as urllib would: an http:// URL is sent through the proxy, an https:// one tunnelled
(CONNECT). Only the name lookup (the resolver has no timeout) can outlast the deadline: the
caller bounds how many sends may be running (notify.SendSlots).
"""

from __future__ import annotations

import base64
import socket
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass

from dflash_tui.core.base.text import safe_label

HEAD_MAX = 65536  # an answer's head longer than this is not an HTTP answer


class PostError(RuntimeError):
    """The POST did not get a 2xx/3xx answer in time; the message says why."""


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    path: str  # what the request line asks for


class _Deadline:
    def __init__(self, timeout: float) -> None:
        self.timeout, self.end = timeout, time.monotonic() + timeout

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise PostError(f"timed out after {self.timeout:g}s")
        return left


def _target(url: str) -> _Target:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PostError(f"not an http(s) URL: {url[:200]}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise PostError(f"bad port in {url[:200]}: {exc}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(c <= " " or c == "\x7f" for c in path + parts.hostname):
        raise PostError(f"a space or control character in the URL: {url[:200]!r}")
    return _Target(parts.scheme, parts.hostname, port, path)


def _proxy(t: _Target) -> tuple[_Target, str | None] | None:
    """The environment's proxy for ``t`` and its Basic credentials (None: go direct)."""
    if urllib.request.proxy_bypass(t.host):
        return None
    url = urllib.request.getproxies_environment().get(t.scheme)
    if not url:
        return None
    url = url if "://" in url else f"http://{url}"
    p = urllib.parse.urlsplit(url)
    auth = None
    if p.username is not None:
        user = urllib.parse.unquote(p.username)
        word = urllib.parse.unquote(p.password or "")
        auth = base64.b64encode(f"{user}:{word}".encode()).decode()
    return _Target("http", p.hostname or "", p.port or 80, ""), auth


def _read_head(sock: socket.socket, deadline: _Deadline) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_MAX:
            raise PostError(f"the answer's head is over {HEAD_MAX} bytes")
        sock.settimeout(deadline.left())
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            raise PostError(f"timed out after {deadline.timeout:g}s") from None
        if not chunk:
            raise PostError("the receiver closed the connection without an answer")
        data += chunk
    return data.partition(b"\r\n\r\n")[0]


def _status(head: bytes) -> tuple[int, str]:
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    words = line.split(" ", 2)
    code = words[1] if len(words) > 1 else ""
    if not words[0].startswith("HTTP/") or not (code.isascii() and code.isdigit()):
        raise PostError(f"not an HTTP answer: {line[:100]!r}")
    return int(words[1]), safe_label(words[2], 100) if len(words) > 2 else ""


def _send(sock: socket.socket, data: bytes, deadline: _Deadline) -> None:
    sock.settimeout(deadline.left())  # sendall's timeout bounds the whole call
    try:
        sock.sendall(data)
    except TimeoutError:
        raise PostError(f"timed out after {deadline.timeout:g}s") from None


def _tunnel(sock: socket.socket, t: _Target, auth: str | None, deadline: _Deadline) -> None:
    lines = [f"CONNECT {t.host}:{t.port} HTTP/1.1", f"Host: {t.host}:{t.port}"]
    if auth:
        lines.append(f"Proxy-Authorization: Basic {auth}")
    _send(sock, ("\r\n".join(lines) + "\r\n\r\n").encode(), deadline)
    code, reason = _status(_read_head(sock, deadline))
    if code != 200:
        raise PostError(f"the proxy refused the tunnel: HTTP {code} {reason}")


def _connect(peer: _Target, deadline: _Deadline) -> socket.socket:
    """A connection to ``peer`` within what is left of the deadline: each address the name
    resolves to gets only the time left (socket.create_connection would give every one the
    whole timeout, so a dead first address could double it)."""
    try:
        infos = socket.getaddrinfo(peer.host, peer.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise PostError(f"cannot resolve {peer.host}: {exc.strerror or exc}") from None
    why: OSError | None = None
    for family, kind, proto, _name, addr in infos:
        left = deadline.left()  # PostError once the deadline is spent
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(left)
            sock.connect(addr)
            return sock
        except OSError as exc:
            sock.close()
            why = exc
    if why is None or isinstance(why, TimeoutError):
        raise PostError(f"timed out after {deadline.timeout:g}s")
    raise PostError(f"cannot reach {peer.host}:{peer.port}: {why.strerror or why}")


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST ``body`` to ``url``; the answer's status. PostError for an error status, a
    connection that fails, or ``timeout`` seconds passed (the whole exchange)."""
    deadline = _Deadline(timeout)
    t = _target(url)
    via = _proxy(t)
    peer = via[0] if via is not None else t
    sock = _connect(peer, deadline)
    try:
        return _exchange(sock, t, via, body, headers, deadline)
    except ssl.SSLError as exc:
        raise PostError(f"TLS: {exc.reason or exc}") from None
    except TimeoutError:
        raise PostError(f"timed out after {timeout:g}s") from None
    except OSError as exc:
        raise PostError(f"{type(exc).__name__}: {exc.strerror or exc}") from None
    finally:
        sock.close()


def _exchange(
    sock: socket.socket,
    t: _Target,
    via: tuple[_Target, str | None] | None,
    body: bytes,
    headers: dict[str, str],
    deadline: _Deadline,
) -> int:
    auth = via[1] if via is not None else None
    if t.scheme == "https":
        if via is not None:
            _tunnel(sock, t, auth, deadline)
        sock.settimeout(deadline.left())
        with ssl.create_default_context().wrap_socket(sock, server_hostname=t.host) as tls:
            # the tunnel's credentials are the proxy's, never sent to the receiver
            return _request(tls, t, t.path, None, body, headers, deadline)
    path = t.path if via is None else f"http://{t.host}:{t.port}{t.path}"
    return _request(sock, t, path, auth, body, headers, deadline)


def _request(
    sock: socket.socket,
    t: _Target,
    path: str,
    auth: str | None,
    body: bytes,
    headers: dict[str, str],
    deadline: _Deadline,
) -> int:
    lines = [f"POST {path} HTTP/1.1", f"Host: {t.host}:{t.port}", "Connection: close",
             f"Content-Length: {len(body)}"]  # fmt: skip
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if auth:
        lines.append(f"Proxy-Authorization: Basic {auth}")
    _send(sock, ("\r\n".join(lines) + "\r\n\r\n").encode() + body, deadline)
    code, reason = _status(_read_head(sock, deadline))
    if code >= 400:
        raise PostError(f"HTTP {code} {reason}".strip())
    return code
