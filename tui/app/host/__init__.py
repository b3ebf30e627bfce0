"""One host: its state and feed, and the pane that draws it.

``state.py`` keeps what the app knows of a host (its latest sample, link, tracker, timeline,
transport); ``feeds.py`` turns its probe's events (``source.py``) into samples, folded and
drawn on its pane, with the app's own alerts (``alerts.py``); ``pane.py`` composes what is
drawn: the header (``header.py``), the GPU grid (``gpus/``), the metrics strip (``metrics.py``)
and host strip (``strip.py``), the logs (``logs/``), the findings and timeline
(``findings/``), the process tree and GPU process table (``procs/``) and the History tab
(``history/``); ``zoom.py`` lets one area fill it. The keys that only change the view act on
it: ``view_keys.py``, and ``log_keys.py`` for search, save and the pager. A host under Slurm
(``slurm.py``) reads its job's word after each sample, and one host per node of the job is fed
by the probe inside the allocation.
"""
