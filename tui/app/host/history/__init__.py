"""The History tab: plots of the run's whole history (loss, tok/s, per-GPU utilisation, power
and memory), zoomable in time; the data is tui/core/diagnosis/history.py's. ``view``: the tab
(``HistoryView``), which mounts its plots (``plot``, plotext's) when first shown."""
