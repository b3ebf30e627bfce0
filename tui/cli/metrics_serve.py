"""The ``metrics`` server (tui/cli/metrics.py checks the flags first): a live feed and the
diagnosis per host keep each host's latest status document; prometheus-client's HTTP server
renders them at every scrape."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import Any

from dflash_tui.cli.follow import kept_view
from dflash_tui.cli.status_doc import status_doc, unreachable
from dflash_tui.core.base.config_types import Config, HostConfig
from dflash_tui.core.base.snapshot import Snapshot
from dflash_tui.core.diagnosis.thresholds import thresholds_for
from dflash_tui.core.diagnosis.tracker import Tracker
from dflash_tui.core.link.connect import make_transport
from dflash_tui.core.link.feed import Disconnected
from dflash_tui.core.link.local_feed import feed_for


class Latest:
    """The latest status document of every host, in config order (read by each scrape)."""

    def __init__(self, cfg: Config) -> None:
        self.hosts = cfg.hosts
        self.docs: dict[str, dict[str, Any]] = {
            h.label: unreachable(h, "no sample yet") for h in cfg.hosts
        }

    def __call__(self) -> list[dict[str, Any]]:
        return [self.docs[h.label] for h in self.hosts]

    async def watch(self, host: HostConfig, interval: float) -> None:
        transport = make_transport(host)
        tracker = Tracker(host.topology, thresholds_for(host))
        kept = kept_view(host, transport)  # the run is its job, as Slurm says it
        try:
            async for ev in feed_for(transport, host, interval).events():
                if isinstance(ev, Snapshot):
                    try:
                        view = await kept.read() if kept is not None else None
                        self.docs[host.label] = status_doc(host, tracker, ev, view)[0]
                    except Exception as exc:  # a bug in diagnosis must not end the exporter
                        print(f"dflash-tui metrics: diagnosis failed: {exc!r}", file=sys.stderr)
                elif isinstance(ev, Disconnected):
                    self.docs[host.label] = unreachable(host, ev.error)
        finally:
            await transport.close()


async def serve(cfg: Config, addr: str, port: int) -> int:
    from prometheus_client import start_http_server

    from dflash_tui.core.export.openmetrics import registry_for

    latest = Latest(cfg)
    server, thread = start_http_server(port, addr, registry_for(latest, time.time))
    bound = server.server_address[1]
    shown = f"[{addr}]" if ":" in addr else addr
    # Stop on a signal from before the URL is printed: whoever reads the URL may stop us at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    print(f"serving OpenMetrics at http://{shown}:{bound}/metrics", flush=True)
    tasks = [asyncio.create_task(latest.watch(h, cfg.interval)) for h in cfg.hosts]
    try:
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return 0
