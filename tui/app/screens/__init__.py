"""The screens: the main screen (``main.py``: the overview of hosts, ``overview.py``, above one
pane per host), the help screen (``help.py``) and the replay's time bar (``timebar.py``)."""
