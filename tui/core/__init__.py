"""The supervisor's core: everything but drawing. Never imports Textual, Rich or torch (the
import contracts in pyproject.toml check it).

One sub-package per layer, data flowing one way (docs/internals.md):

- ``probe``: what runs on the GPU host with nothing installed (stdlib python3 >= 3.8, or POSIX
  sh), and how it is bundled to travel over stdin.
- ``base``: the vocabulary every layer shares: the frozen sample records, the run directory,
  the config, the control timings, terminal-safe text.
- ``link``: how commands reach the host (local, SSH, containers), host PID maps, the feed.
- ``diagnosis``: pure rules from samples to labels, findings, run state and timeline.
- ``alerts``: alerts to a person: the record, the rate limit (pure), the notifiers (a
  command, a webhook) with timeouts.
- ``control``: launch, kill, restart, one PID, the auto-restart policy, control.sh, and the
  headless supervisor (its loop, lock and record in the run root).

``control`` may use ``link``, ``diagnosis`` and ``alerts``; none of those uses another.
"""
