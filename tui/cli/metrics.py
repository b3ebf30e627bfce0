"""``dflash-tui metrics [COMMON FLAGS] --listen 127.0.0.1:9400``: OpenMetrics at ``/metrics``.

Every host is watched by the live feed and the diagnosis the app and ``supervise`` use (one
probe per host, ``--interval`` apart); each sample becomes the host's ``status --json``
document (``status_doc.status_doc``), and each scrape renders the latest documents through
``core/export/openmetrics.py`` with prometheus-client's own HTTP server
(tui/cli/metrics_serve.py) (OpenMetrics when the
scraper asks for it, as Prometheus does; the Prometheus text format otherwise). A host whose
link is down reads ``dflash_host_up 0``.

It binds to loopback unless told otherwise: any other address needs ``--allow-remote``, and it
says so on stderr (the metrics name the hosts, GPUs and runs; there is no authentication).
prometheus-client is the ``metrics`` extra: without it the command says how to install it.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from types import ModuleType

from dflash_tui.cli.flags import DEFAULT_LISTEN
from dflash_tui.core.base.config_types import Config
from dflash_tui.core.base.text import terminal_safe

INSTALL = "pip install 'dflash-tui[metrics]' (or: pip install prometheus-client)"


def openmetrics_module() -> ModuleType | None:
    """prometheus-client, or None with the reason on stderr."""
    try:
        import prometheus_client
    except ImportError:
        print(f"dflash-tui: OpenMetrics needs prometheus-client: {INSTALL}", file=sys.stderr)
        return None
    return prometheus_client


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[::1]:9400`` for IPv6) -> (addr, port); ValueError says why."""
    addr, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected ADDR:PORT, e.g. {DEFAULT_LISTEN}")
    return addr.strip("[]") or "127.0.0.1", int(port)


def is_loopback(addr: str) -> bool:
    if addr == "localhost":
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def run_metrics(cfg: Config, args: argparse.Namespace) -> int:
    try:
        addr, port = parse_listen(args.listen)
    except ValueError as exc:
        print(terminal_safe(f"dflash-tui metrics: {exc}"), file=sys.stderr)
        return 2
    if not is_loopback(addr):
        if not args.allow_remote:
            print(
                terminal_safe(
                    f"dflash-tui metrics: {addr} is not a loopback address: pass --allow-remote "
                    "to serve the metrics beyond this machine (they have no authentication)"
                ),
                file=sys.stderr,
            )
            return 2
        print(
            terminal_safe(
                f"dflash-tui metrics: note: serving on {addr}, beyond this machine, "
                "without authentication"
            ),
            file=sys.stderr,
        )
    if openmetrics_module() is None:
        return 1
    from dflash_tui.cli.metrics_serve import serve

    try:
        return asyncio.run(serve(cfg, addr, port))
    except OSError as exc:  # the port is taken, the address is not ours
        print(terminal_safe(f"dflash-tui metrics: cannot listen on {args.listen}: {exc}"),
              file=sys.stderr)  # fmt: skip
        return 1
