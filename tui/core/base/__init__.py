"""The vocabulary every layer of the core shares (pure, stdlib only, no I/O but the config file).

- ``snapshot``: frozen records of one probe sample (``Snapshot``, ``Gpu``, ``Proc``, ...),
  parsed tolerantly from the probe's JSON line.
- ``rundir``: the run directory's files, the run states (``ALIVE_STATES``) and the pure rules
  that read a run back (``run_state``, ``exit_meaning``, ``parse_report``).
- ``config``: the TOML config merged with flags (``Config``, ``HostConfig``, ``resolve``).
- ``timings``: control timings (kill grace, start window, release timeout) and
  ``RestartPolicy``: one home for each, used by the command line, the app and the core.
- ``text``: making untrusted text terminal-safe (``clean_line``, ``safe_label``,
  ``printable``) and short number formats.

Every other layer may import these; they import nothing of the other layers.
"""
