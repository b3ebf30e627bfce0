"""Run control: everything that changes the world on the GPU host, verified before it signals.

- ``script``: the ``control.sh`` runner, input checks, ``ControlError`` (the one), and the
  ``ActionProgress`` an action reports while it waits.
- ``launch``, ``kill``, ``restart`` (with compile-cache clearing and the auto-restart runner
  ``supervise``), ``pid`` (one process, verified by PID and start time, never by name).
- ``policy``: the auto-restart decisions (``AutoRestart``, ``Decision``), pure.
- ``supervisor_loop``: what every headless supervisor does around its decisions: the lock,
  the loop, the heartbeat, the stop when the lock was taken over, the release; its restarts,
  FATAL and write errors for the record. ``supervisor``: the host's (``dflash-tui
  supervise``): cycle, feed, alerts; ``job_supervisor``: a job's, across its members;
  ``supervisor_state``: its identity and what its record keeps; ``supervisor_files``: the
  lock, ``supervisor.json`` and the policy request, through ``supervisor.sh``.
- ``control.sh``, ``supervisor.sh``: the POSIX sh programs that do the work on the host
  (written by hand: they run where nothing of ours is installed).

Uses ``base``, ``link``, ``diagnosis`` and ``alerts``.
"""
