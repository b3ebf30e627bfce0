"""The main screen's keys: the key table and its bindings (``table.py``), and the user's
``[keys]`` remapping of them with the help screen's list (``keymap.py``), and the footer that
shows them, whole labels only (``footer.py``)."""
