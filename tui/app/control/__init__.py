"""Keys that change the world, per host: each is one value (``requests.py``: launch, kill,
restart, ``K``'s signals) built when the key is pressed, shown by its confirm dialog
(``confirm.py``) and sent as is (``actions.py``) through run control (``bridge.py``, on
tui/core/control/). ``K``'s process menu (``signals.py``; several processes at once in
``kill_many.py``), the app's own auto-restart (``autorestart.py``) and ``A`` beside a live
headless supervisor (``supervised.py``); what quitting does to the workers of these
(``quit.py``). On a host under Slurm, ``l``, ``k`` and ``r``
go through the scheduler (``slurm.py``). A long action's progress is drawn on the wait bar
(tui/app/widgets/waits.py).
"""
