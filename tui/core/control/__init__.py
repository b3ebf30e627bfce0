"""Run control: everything that changes the world on the GPU host, verified before it signals.

- ``script``: the ``control.sh`` runner, input checks, ``ControlError`` (the one), and the
  ``ActionProgress`` an action reports while it waits.
- ``launch``, ``kill``, ``restart`` (with compile-cache clearing and the auto-restart runner
  ``supervise``), ``pid`` (one process, verified by PID and start time, never by name).
- ``policy``: the auto-restart decisions (``AutoRestart``, ``Decision``), pure.
- ``control.sh``: the POSIX sh program that does the work on the host (written by hand: it runs
  where nothing of ours is installed).

Uses ``base``, ``link`` and ``diagnosis``.
"""
