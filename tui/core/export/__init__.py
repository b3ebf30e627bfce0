"""Exports of what the diagnosis found, for other tools.

- ``openmetrics``: the status documents (tui/core/diagnosis/document.py, one per host) as
  Prometheus/OpenMetrics metric families (prometheus-client, the optional ``metrics`` extra),
  pure: ``dflash-tui metrics`` serves them, ``status --openmetrics`` prints them once.
"""
