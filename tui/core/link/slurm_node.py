"""A node of a Slurm job, reached from the login node: every command wrapped as ``srun
--jobid=ID --overlap -w NODE`` (a step inside the job's allocation, beside its own), the way
a container wrapper (container.py) wraps them, so the probe and control need no SSH to
compute nodes. With ``node_access = "ssh"`` the node is an SSH host of its own instead.
"""

from __future__ import annotations

import re
import shlex

from dflash_tui.core.base.config_types import HostConfig
from dflash_tui.core.link.transport import LocalTransport, Transport, TransportError, Wrap

_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_JOB = re.compile(r"\d+(_\d+)?")


def is_job_id(text: str) -> bool:
    """A Slurm job id (``123``, or an array task ``123_4``): the one check before an id read
    from a file or a command's output is put on a command line."""
    return _JOB.fullmatch(text) is not None


def srun_wrap(job_id: str, node: str) -> Wrap:
    """Wrap a sh command as one task of a step on ``node`` inside job ``job_id``."""
    if not is_job_id(job_id) or not _NODE.fullmatch(node):
        raise TransportError(f"not a Slurm job and node: {job_id[:20]!r} {node[:40]!r}")
    prefix = (
        f"srun --jobid={job_id} --overlap --nodes=1 --ntasks=1 -w {shlex.quote(node)} "
        "--quiet --gres=none sh -c"
    )

    def wrap(cmd: str) -> str:
        return f"{prefix} {shlex.quote(cmd)}"

    return wrap


def node_transport(host: HostConfig, job_id: str, node: str) -> Transport:
    """The transport to one node of the job: through srun from the host (the login node, over
    its SSH connection, or this machine), or SSH to the node itself."""
    if host.slurm.node_access == "ssh":
        if not _NODE.fullmatch(node):
            raise TransportError(f"not a node name: {node[:40]!r}")
        from dflash_tui.core.link.ssh import SshTransport

        return SshTransport(node, accept_new=host.insecure_accept_new_host_key)
    wrap = srun_wrap(job_id, node)
    if host.address is None:
        transport: Transport = LocalTransport(wrap)
    else:
        from dflash_tui.core.link.ssh import SshTransport

        transport = SshTransport(host.address, wrap, accept_new=host.insecure_accept_new_host_key)
    transport.label = f"{host.label}/{node}"
    return transport
