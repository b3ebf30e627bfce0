"""How the supervisor reaches the machine where the GPUs are, and the feed of samples from it.

- ``transport``: the ``Transport`` interface (run a command with stdin, stream its lines) and
  ``LocalTransport``; ``ssh``: ``SshTransport`` over one asyncssh connection per host;
  ``ssh_connect``: opening it the way ``ssh`` would (config, ProxyJump, host keys).
- ``container``: wrappers for ``pct:ID``, ``docker:NAME`` and templates; ``hostmap``: host PIDs
  of GPU processes mapped to container PIDs; ``connect``: the transport for a host.
- ``feed``: runs the probe through a transport and yields Snapshots, reconnecting with
  backoff (``Feed``, ``sample_once``, ``Disconnected``, ``Malformed``).
- ``fanout``: many hosts at once, a bounded number of them opening at a time.

Uses ``base`` and ``probe``; never ``diagnosis`` or ``control``.
"""
