"""Pick the transport for a host: this machine, or SSH; wrapped for its container."""

from __future__ import annotations

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.link.container import wrapper
from dflash_tui.core.link.transport import LocalTransport, Transport


def make_transport(host: HostConfig) -> Transport:
    wrap = wrapper(host.container)
    if host.address is None:
        return LocalTransport(wrap)
    from dflash_tui.core.link.ssh import SshTransport  # asyncssh is imported only for remote hosts

    return SshTransport(host.address, wrap, accept_new=host.insecure_accept_new_host_key)
