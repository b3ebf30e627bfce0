"""Pick the transport for a host: this machine, or SSH; wrapped for its container."""

from __future__ import annotations

from tui.core.config import HostConfig
from tui.core.container import wrapper
from tui.core.transport import LocalTransport, Transport


def make_transport(host: HostConfig) -> Transport:
    wrap = wrapper(host.container)
    if host.address is None:
        return LocalTransport(wrap)
    from tui.core.ssh import SshTransport  # asyncssh is imported only for remote hosts

    return SshTransport(host.address, wrap, accept_new=host.insecure_accept_new_host_key)
